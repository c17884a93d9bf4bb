// Command pgorder shows a shop that keeps its orders in PostgreSQL and
// sells image-generation credits: the order row and the credit grant are
// written in one transaction of the app's, and so are a poster order and
// the generation it pays for. If anything in the transaction fails, it
// rolls back whole: no order without its credits, no credits without an
// order, no task without its charge.
//
//	go run ./examples/pgorder -postgres 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/store/postgres"
)

func main() {
	url := flag.String("postgres", os.Getenv("DATABASE_URL"), "PostgreSQL URL")
	schema := flag.String("schema", "pgorder_example", "schema of the shop's and imagegen's tables")
	flag.Parse()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, *url)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	s, err := openShop(ctx, pool, *schema)
	if err != nil {
		log.Fatal(err)
	}
	defer s.store.Close()

	run := time.Now().UnixNano() // order ids of this run
	bought, err := s.buyCredits(ctx, "alice", fmt.Sprintf("credits-%d", run), 10, 500)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("credits after the order:", bought.Balance)
	sub, err := s.orderPoster(ctx, "alice", fmt.Sprintf("poster-%d", run), "a lighthouse at dusk")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.svc.RunOnce(ctx); err != nil { // a worker would do this
		log.Fatal(err)
	}
	task, err := s.svc.Task(ctx, "alice", sub.TaskID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("poster task:", task.Status, "credits left:", sub.CreditsRemaining)
}

// shop is the app: its own orders table, beside imagegen's tables.
type shop struct {
	pool  *pgxpool.Pool
	store *postgres.Store
	svc   *imagegen.Service
	table string // the orders table, quoted
}

func openShop(ctx context.Context, pool *pgxpool.Pool, schema string) (*shop, error) {
	// The app applies imagegen's migrations with its own, at deploy time.
	if err := postgres.Migrate(ctx, pool, schema); err != nil {
		return nil, err
	}
	table := pgx.Identifier{schema, "orders"}.Sanitize()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
		id         text PRIMARY KEY,
		customer   text NOT NULL,
		item       text NOT NULL,
		paid_cents bigint NOT NULL CHECK (paid_cents >= 0)
	)`); err != nil {
		return nil, err
	}
	store, err := postgres.New(pool, postgres.Config{Schema: schema})
	if err != nil {
		return nil, err
	}
	// A real app plugs in a provider model (package model/...).
	svc, err := imagegen.New(imagegen.Config{
		Store:        store,
		Model:        imagegentest.NewModel(2),
		Logger:       slog.New(slog.DiscardHandler),
		WorkerConfig: imagegen.WorkerConfig{WorkReady: store.WorkReady()},
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	return &shop{pool: pool, store: store, svc: svc, table: table}, nil
}

// buyCredits records a paid order and grants its credits in one
// transaction; the order id makes the grant idempotent (a retried
// payment callback reports AlreadyApplied and records nothing more).
func (s *shop) buyCredits(ctx context.Context, customer, orderID string, credits, cents int64) (imagegen.LedgerResult, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return imagegen.LedgerResult{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	res, err := s.store.GrantTx(ctx, tx, customer, credits, orderID)
	if err != nil || res.AlreadyApplied {
		return res, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.table+` (id, customer, item, paid_cents) VALUES ($1, $2, $3, $4)`,
		orderID, customer, fmt.Sprintf("%d credits", credits), cents); err != nil {
		return imagegen.LedgerResult{}, fmt.Errorf("record order: %w", err) // the grant rolls back with it
	}
	return res, tx.Commit(ctx)
}

// orderPoster records a poster order and submits its generation, paid
// from the customer's credits, in one transaction.
func (s *shop) orderPoster(ctx context.Context, customer, orderID, prompt string) (imagegen.Submission, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return imagegen.Submission{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	sub, err := s.store.SubmitTx(ctx, tx, s.svc, customer, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: prompt})
	if err != nil {
		return sub, err // e.g. imagegen.ErrInsufficientCredits: no order either
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.table+` (id, customer, item, paid_cents) VALUES ($1, $2, $3, 0)`,
		orderID, customer, "poster "+sub.TaskID); err != nil {
		return imagegen.Submission{}, fmt.Errorf("record order: %w", err)
	}
	return sub, tx.Commit(ctx)
}
