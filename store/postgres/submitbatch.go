package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/imagegen/imagegen"
)

// A batch of submits that fails after it was sent (its timeout passed
// while it waited for a lock or for its commit, the connection was cut)
// may still commit afterwards: the backend goes on with the statement
// it received whatever became of the client, and only notices when it
// answers. A lookup of the tasks at that moment finds nothing, and an
// idempotent submit that gave its key up on that would charge its retry
// a second time. So the batch learns its transaction before it runs:
// its first statement takes a transaction-scoped advisory lock named by
// the transaction's id and answers that id and the backend's pid, and
// the server sends that answer at once (a Flush) before it runs
// submit_tasks, in the same round trip and the same implicit transaction
// (up to the Sync). After a failure of unknown outcome, settleBatch
// cancels the backend's statement if it still runs that transaction,
// waits for the lock (the transaction has ended, and its writes are
// visible), and reads its fate with txid_status. Every step names the
// backend and the transaction itself, so it holds behind a transaction
// pooler, where the session that runs the batch is not the client's.

// batchStartSQL is a batch's first statement ($1 the schema's name).
const batchStartSQL = `SELECT txid_current(), pg_backend_pid()
	FROM (SELECT pg_advisory_xact_lock(hashtext($1::text || ':submit'), (txid_current() % 2147483648)::int4) OFFSET 0) l`

// settleSQL waits for the transaction $2 to end ($1 the schema's name,
// as in batchStartSQL) and returns its fate.
const settleSQL = `SELECT txid_status($2::bigint)
	FROM (SELECT pg_advisory_xact_lock(hashtext($1::text || ':submit'), ($2::bigint % 2147483648)::int4) OFFSET 0) l`

// cancelBatchSQL cancels the statement of backend $1 while it runs
// transaction $2 (a pid alone may be another session's by now).
const cancelBatchSQL = `SELECT pg_cancel_backend(pid) FROM pg_stat_activity
	WHERE pid = $1::int AND backend_xid = ($2::bigint % 4294967296)::text::xid`

// submitSQL runs submit_tasks with a batch's columns ($2 to $10).
const submitSQL = `SELECT code, balance, {now} FROM {schema}.submit_tasks($2, $3, $4, $5, $6, $7, $8, $9, $10, {now})`

// settleTimeout bounds settleBatch.
const settleTimeout = 10 * time.Second

// errStatementsGone: the server no longer had the batch's prepared
// statements, and refused the batch before it ran anything.
var errStatementsGone = errors.New("the batch's prepared statements were gone")

// errUnsettled is the error of a batch whose outcome stays unknown.
var errUnsettled = fmt.Errorf("the batch may still commit: %w", imagegen.ErrOutcomeUnknown)

// submitBatch runs submit_tasks with args (submitSQL's, $1 first) in
// one round trip, and settles a failure after the batch was sent: the
// error then says whether the batch did not commit (a plain error), or
// may yet (wrapping imagegen.ErrOutcomeUnknown). A batch that committed
// though its answer was lost on the way back answers its results.
func (s *Store) submitBatch(ctx context.Context, args []any) (codes []int32, balances []int64, at time.Time, err error) {
	r, err := s.sendBatch(ctx, args)
	if errors.Is(err, errStatementsGone) {
		r, err = s.sendBatch(ctx, args) // nothing ran; prepared again
	}
	if err == nil || !r.sent {
		return r.codes, r.balances, r.at, err
	}
	// The batch's connection is back in the pool (closed, when the
	// failure broke it): settling takes one of its own, and on a pool
	// of one it could not get one while the batch held it.
	committed, serr := s.settleBatch(ctx, r.pid, r.xid)
	switch {
	case serr != nil:
		return nil, nil, time.Time{}, fmt.Errorf("%w: %w (settling it: %w)", errUnsettled, err, serr)
	case committed && r.codes != nil: // only the commit's answer was lost
		return r.codes, r.balances, r.at, nil
	case committed:
		return nil, nil, time.Time{}, fmt.Errorf("the batch committed, its answer lost: %w", err)
	}
	return nil, nil, time.Time{}, fmt.Errorf("the batch did not commit: %w", err)
}

// batchRun is what sendBatch learnt of a batch.
type batchRun struct {
	codes    []int32
	balances []int64
	at       time.Time
	// sent: the batch's transaction (xid, on backend pid) was under way
	// when it failed, so its failure needs settling.
	sent     bool
	xid, pid int64
}

// sendBatch runs the batch's pipeline on a connection of its own, which
// it releases before it returns. A failure it returns with r.sent unset
// is settled already: nothing was sent, or the transaction is known to
// be over, or its id never came back (wrapping errUnsettled).
func (s *Store) sendBatch(ctx context.Context, args []any) (r batchRun, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return r, err // nothing sent
	}
	defer conn.Release()
	typeMap := conn.Conn().TypeMap()
	start, submit, err := s.batchStatements(ctx, conn.Conn())
	if err != nil {
		return r, err // nothing sent
	}
	var eqb pgx.ExtendedQueryBuilder
	if err := eqb.Build(typeMap, submit, args); err != nil {
		return r, err
	}
	p := conn.Conn().PgConn().StartPipeline(ctx)
	startArgs := [][]byte{[]byte(s.schema)}
	if start != nil {
		p.SendQueryPrepared(start.Name, startArgs, nil, nil)
		p.SendFlushRequest()
		p.SendQueryPrepared(submit.Name, eqb.ParamValues, eqb.ParamFormats, eqb.ResultFormats)
	} else {
		p.SendQueryParams(batchStartSQL, startArgs, nil, nil, nil)
		p.SendFlushRequest()
		p.SendQueryParams(s.sql(submitSQL), eqb.ParamValues, nil, eqb.ParamFormats, eqb.ResultFormats)
	}
	p.SendPipelineSync()
	if err := p.Flush(); err != nil {
		_ = p.Close()
		if pgconn.SafeToRetry(err) {
			return r, err // nothing sent
		}
		return r, fmt.Errorf("%w: %w", errUnsettled, err)
	}
	if err := readRow(typeMap, p, &r.xid, &r.pid); err != nil {
		_ = p.Close()
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			s.forgetBatchStatements(ctx, conn.Conn(), start != nil)
			if start != nil && pgErr.Code == "26000" { // invalid_sql_statement_name
				err = fmt.Errorf("%w: %w", errStatementsGone, err)
			}
			return r, err // refused: the transaction is over
		}
		return r, fmt.Errorf("%w: %w", errUnsettled, err) // the transaction is not known
	}
	err = readRow(typeMap, p, &r.codes, &r.balances, &r.at)
	if err == nil {
		err = readSync(p)
	} else if errors.As(err, new(*pgconn.PgError)) {
		_ = p.Close()
		s.forgetBatchStatements(ctx, conn.Conn(), start != nil)
		return batchRun{}, err // submit_tasks failed: nothing commits
	}
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	r.sent = err != nil
	return r, err
}

// batchStatements are the batch's two statements prepared on conn (once
// a connection: Prepare answers from the connection's own list after
// that), when the pool keeps prepared statements (pgx's default mode,
// cache_statement), as every other statement of the store is then: the
// server parses and plans each once a connection instead of once a
// batch, which costs it about a fifth of a submit's CPU. In any other
// mode (behind a transaction pooler, where a named statement does not
// outlive its transaction) they are nil, and the batch sends its
// statements unnamed, parsed where they run.
func (s *Store) batchStatements(ctx context.Context, conn *pgx.Conn) (start, submit *pgconn.StatementDescription, err error) {
	if !s.prepareBatch {
		return nil, nil, nil
	}
	if start, err = conn.Prepare(ctx, batchStartName, batchStartSQL); err != nil {
		return nil, nil, err
	}
	if submit, err = conn.Prepare(ctx, s.submitName, s.sql(submitSQL)); err != nil {
		return nil, nil, err
	}
	return start, submit, nil
}

// forgetBatchStatements deallocates the batch's prepared statements on
// conn after the server refused one (when prepared is set), so that the
// next batch on conn prepares them again, as pgx does with the
// statements it caches: a statement the server no longer has (a host
// app's DISCARD ALL on a shared pool) or whose plan may not change its
// result type would otherwise fail every batch on conn until the pool
// closed it. Preparing again after a refusal of another kind (a taken
// id) costs one round trip.
func (s *Store) forgetBatchStatements(ctx context.Context, conn *pgx.Conn, prepared bool) {
	if !prepared {
		return
	}
	for _, name := range []string{batchStartName, s.submitName} {
		if err := conn.Deallocate(ctx, name); err != nil {
			return // the connection is broken: the pool closes it
		}
	}
}

// batchStartName names batchStartSQL prepared; submitStatementName names
// a schema's submitSQL prepared (the schema is in its text, so a
// connection may hold one a schema).
const batchStartName = "imagegen_batch_start"

func submitStatementName(query string) string {
	sum := sha256.Sum256([]byte(query))
	return "imagegen_submit_tasks_" + hex.EncodeToString(sum[:12])
}

// settleBatch waits until transaction xid of backend pid has ended,
// cancelling its statement if it still runs, and reports whether it
// committed. The wait is bounded by settleTimeout, past the batch's own
// deadline.
func (s *Store) settleBatch(ctx context.Context, pid, xid int64) (committed bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	// A role that may not cancel it only waits longer for it to end.
	_, cancelErr := s.pool.Exec(ctx, cancelBatchSQL, pid, xid)
	var status *string
	if err := s.pool.QueryRow(ctx, settleSQL, s.schema, xid).Scan(&status); err != nil {
		return false, errors.Join(s.wrapErr("settle a batch of submits", err), cancelErr)
	}
	switch {
	case status == nil:
		return false, fmt.Errorf("transaction %d is too old to tell", xid)
	case *status == "committed":
		return true, nil
	case *status == "aborted":
		return false, nil
	}
	return false, fmt.Errorf("transaction %d is %s", xid, *status)
}

// readRow reads the next result of p, one row, into dst.
func readRow(typeMap *pgtype.Map, p *pgconn.Pipeline, dst ...any) error {
	res, err := p.GetResults()
	if err != nil {
		return err
	}
	rr, ok := res.(*pgconn.ResultReader)
	if !ok {
		return fmt.Errorf("pipeline: got %T, want a result", res)
	}
	rows := pgx.RowsFromResultReader(typeMap, rr)
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := rows.Scan(dst...); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// readSync reads the pipeline's Sync: the batch's commit.
func readSync(p *pgconn.Pipeline) error {
	res, err := p.GetResults()
	if err != nil {
		return err
	}
	if _, ok := res.(*pgconn.PipelineSync); !ok {
		return fmt.Errorf("pipeline: got %T, want its sync", res)
	}
	return nil
}
