package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
)

// The host app's transactions. SubmitTx, GrantTx and ChargeWebTx do
// their work inside a pgx.Tx of the app's, beside the app's own writes
// (an order row, a payment): if the app rolls back, no credit moves and
// no task exists; once it commits, everything is there at once. They
// follow the rules of Service.Submit, Service.Grant and Service.ChargeWeb
// exactly, and a refusal (ErrInsufficientCredits, a reference already
// applied, a bad request) raises no SQL error, so the transaction stays usable and
// the app decides whether to commit the rest.
//
// The account row of the owner stays locked until the transaction ends,
// so other charges of that owner wait for it: keep such transactions
// short.

// SubmitTx submits req for owner through svc (Service.SubmitWith: the
// rules, price, log lines and metrics of Service.Submit) and creates the
// task inside tx, debiting its price. Idle workers in
// every process are notified when tx commits (NOTIFY is transactional);
// give svc's Config.WorkReady the store's WorkReady so that they start at
// once. svc must run on this store (imagegen.ErrOtherStore otherwise).
func (s *Store) SubmitTx(ctx context.Context, tx pgx.Tx, svc *imagegen.Service, owner string, req imagegen.Request) (imagegen.Submission, error) {
	if tx == nil || svc == nil {
		return imagegen.Submission{}, errors.New("postgres store: SubmitTx needs a transaction and a service")
	}
	sub, err := svc.SubmitWith(ctx, owner, req, s, func(ctx context.Context, t *imagegen.Task, p imagegen.CreateParams) (int64, error) {
		balance, err := s.createTask(ctx, tx, t, p)
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, s.queued); err != nil {
			return 0, s.wrapErr("submit: notify", err)
		}
		return balance, nil
	})
	return sub, err
}

// GrantTx adds amount credits to owner's balance inside tx, once per
// ref, as Service.Grant does: ref is required, and a grant repeated with
// the same ref changes nothing and reports AlreadyApplied.
func (s *Store) GrantTx(ctx context.Context, tx pgx.Tx, owner string, amount int64, ref string) (imagegen.LedgerResult, error) {
	e, err := imagegen.GrantEntry(owner, amount, ref)
	if err != nil {
		return imagegen.LedgerResult{}, err
	}
	return s.entryTx(ctx, tx, e)
}

// ChargeWebTx debits amount credits for the app's own use inside tx,
// once per ref, as Service.ChargeWeb does: ErrInsufficientCredits
// (nothing charged) when the balance is short, AlreadyApplied for a ref
// already charged.
func (s *Store) ChargeWebTx(ctx context.Context, tx pgx.Tx, owner string, amount int64, ref string) (imagegen.LedgerResult, error) {
	e, err := imagegen.WebChargeEntry(owner, amount, ref)
	if err != nil {
		return imagegen.LedgerResult{}, err
	}
	return s.entryTx(ctx, tx, e)
}

func (s *Store) entryTx(ctx context.Context, tx pgx.Tx, e imagegen.LedgerEntry) (imagegen.LedgerResult, error) {
	if tx == nil {
		return imagegen.LedgerResult{}, errors.New("postgres store: a transaction is required")
	}
	// In a savepoint: an entry the database refuses with an error (a
	// balance that would pass the largest bigint) is an error of the
	// call, and must not abort the host's transaction.
	var res imagegen.LedgerResult
	var outcome error
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		res, outcome = imagegen.LedgerOutcome(s.addEntry(ctx, sp, e))
		return outcome
	})
	if err != nil && outcome == nil { // the savepoint's own statements failed
		return imagegen.LedgerResult{}, s.wrapErr("add ledger entry", err)
	}
	return res, err
}
