package postgres_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

func newService(t *testing.T, s *postgres.Store, c imagegen.Config) *imagegen.Service {
	t.Helper()
	c.Store, c.Model, c.Logger = s, imagegentest.NewModel(2), slog.New(slog.DiscardHandler)
	svc, err := imagegen.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

var prompt = imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a red fox"}

// A rolled-back host transaction moves no credit and leaves no task.
func TestRolledBackTransactionChangesNothing(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	svc := newService(t, s, imagegen.Config{})
	_, err := svc.Grant(ctx, "alice", 3, "before")
	is.NoErr(err)
	ledgerBefore, err := s.Ledger(ctx, "alice")
	is.NoErr(err)

	tx, err := pool.Begin(ctx)
	is.NoErr(err)
	res, err := s.GrantTx(ctx, tx, "alice", 10, "order-1")
	is.NoErr(err)
	is.Equal(res.Balance, int64(13))
	res, err = s.ChargeWebTx(ctx, tx, "alice", 4, "page-1")
	is.NoErr(err)
	is.Equal(res.Balance, int64(9))
	sub, err := s.SubmitTx(ctx, tx, svc, "alice", prompt)
	is.NoErr(err)
	is.Equal(sub.CreditsRemaining, int64(9-sub.CreditsUsed))
	is.NoErr(tx.Rollback(ctx))

	b, err := s.Balance(ctx, "alice")
	is.NoErr(err)
	is.Equal(b, int64(3))
	ledgerAfter, err := s.Ledger(ctx, "alice")
	is.NoErr(err)
	is.Equal(ledgerAfter, ledgerBefore)
	_, err = s.Task(ctx, "alice", sub.TaskID)
	is.True(errors.Is(err, imagegen.ErrTaskNotFound))
	ran, err := svc.RunOnce(ctx)
	is.NoErr(err)
	is.True(!ran) // nothing to run
	// The references were not used up: the same order can be granted again.
	again, err := svc.Grant(ctx, "alice", 10, "order-1")
	is.NoErr(err)
	is.True(!again.AlreadyApplied)
}

// A committed host transaction is all there, and wakes idle workers of
// another process at once (their poll interval is an hour here).
func TestCommittedTransactionWakesWorkers(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool := pgtest.Connect(t)
	api := pgtest.NewStore(t, pool, postgres.Config{})
	workerStore, err := postgres.New(pool, postgres.Config{Schema: api.Schema()})
	is.NoErr(err)
	defer workerStore.Close()
	apiSvc := newService(t, api, imagegen.Config{})
	worker := newService(t, workerStore, imagegen.Config{WorkerConfig: imagegen.WorkerConfig{PollInterval: time.Hour, WorkReady: workerStore.WorkReady()}})
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx) }()
	defer func() { cancel(); <-done }()

	tx, err := pool.Begin(ctx)
	is.NoErr(err)
	_, err = api.GrantTx(ctx, tx, "bob", 5, "order-7")
	is.NoErr(err)
	// A refusal leaves the transaction usable.
	_, err = api.ChargeWebTx(ctx, tx, "bob", 50, "too-much")
	is.True(errors.Is(err, imagegen.ErrInsufficientCredits))
	res, err := api.GrantTx(ctx, tx, "bob", 5, "order-7")
	is.NoErr(err)
	is.True(res.AlreadyApplied)
	is.Equal(res.Balance, int64(5))
	sub, err := api.SubmitTx(ctx, tx, apiSvc, "bob", prompt)
	is.NoErr(err)
	_, err = api.SubmitTx(ctx, tx, apiSvc, "bob", imagegen.Request{Scene: imagegen.SceneTextToImage})
	var ve *imagegen.ValidationError
	is.True(errors.As(err, &ve)) // the rules of Submit
	is.NoErr(tx.Commit(ctx))

	task, err := apiSvc.WaitTask(ctx, "bob", sub.TaskID, 10*time.Second)
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusSuccess)
	b, err := api.Balance(ctx, "bob")
	is.NoErr(err)
	is.Equal(b, 5-sub.CreditsUsed)
	ledger, err := api.Ledger(ctx, "bob")
	is.NoErr(err)
	is.Equal(len(ledger), 2) // the grant and the charge
}

// SubmitTx refuses a service that runs on another store.
func TestSubmitTxNeedsTheSameStore(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	a := pgtest.NewStore(t, pool, postgres.Config{})
	b := pgtest.NewStore(t, pool, postgres.Config{})
	tx, err := pool.Begin(ctx)
	is.NoErr(err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = a.SubmitTx(ctx, tx, newService(t, b, imagegen.Config{}), "u", prompt)
	is.True(errors.Is(err, imagegen.ErrOtherStore))
}

// submissions counts Observer.TaskSubmitted.
type submissions struct {
	imagegen.NopObserver
	n atomic.Int64
}

func (s *submissions) TaskSubmitted(imagegen.Scene, string, int64) { s.n.Add(1) }

// A task submitted in the host's transaction is counted like any other.
func TestSubmitTxIsObserved(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	obs := &submissions{}
	svc := newService(t, s, imagegen.Config{Observer: obs})
	_, err := svc.Grant(ctx, "alice", 5, "signup")
	is.NoErr(err)
	tx, err := pool.Begin(ctx)
	is.NoErr(err)
	_, err = s.SubmitTx(ctx, tx, svc, "alice", prompt)
	is.NoErr(err)
	is.NoErr(tx.Commit(ctx))
	is.Equal(obs.n.Load(), int64(1))
}
