package postgres_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// heldModelState leaves schema with model "slow" held back while "fast"
// ran: a's five tasks pending in slow (tags 1000 to 5000), b's ten of
// fast processing (tags 1000 to 10000, so vtime is 10000), and accounts
// for d, e and f.
func heldModelState(t *testing.T, pool *pgxpool.Pool, schema string) {
	t.Helper()
	ctx := context.Background()
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, `INSERT INTO `+q+`.accounts (owner, balance) VALUES
		('a', 100), ('b', 100), ('d', 100), ('e', 100), ('f', 100)`); err != nil {
		t.Fatal(err)
	}
	var pre submitCall
	for i := range 5 {
		pre.addOf(fmt.Sprintf("pre-a%d", i), "a", "slow")
	}
	for i := range 10 {
		pre.addOf(fmt.Sprintf("pre-b%d", i), "b", "fast")
	}
	pre.mustRun(t, pool, schema)
	if _, err := pool.Exec(ctx, `UPDATE `+q+`.tasks SET status = 'processing', attempt = 1 WHERE owner = 'b'`); err != nil {
		t.Fatal(err)
	}
}

// tagsOf returns the tags of the tasks ids in schema.
func tagsOf(t *testing.T, pool *pgxpool.Pool, schema string, ids ...string) []int64 {
	t.Helper()
	var tags []int64
	for _, id := range ids {
		var tag int64
		if err := pool.QueryRow(context.Background(), `SELECT tag FROM `+pgx.Identifier{schema}.Sanitize()+`.tasks WHERE id = $1`,
			id).Scan(&tag); err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		tags = append(tags, tag)
	}
	return tags
}

// A batch tags each task from its model's base (migration 28), read once
// a model a batch, and its runs of tasks of several models exactly as the
// same tasks submitted one at a time: d's first task of the held model
// is tagged one turn after the head of its backlog (1000), not after
// vtime (10000), and a run's task of a model whose base is lower than
// its owner's task before it comes after that task.
func TestSubmitTagsFromTheModelsHead(t *testing.T) {
	pool := pgtest.Connect(t)
	batched, single := pgtest.MigratedSchema(t, pool), pgtest.MigratedSchema(t, pool)
	heldModelState(t, pool, batched)
	heldModelState(t, pool, single)

	var batch submitCall
	batch.addOf("a1", "a", "fast") // after a's last pending task (5000), from vtime: 11000
	batch.addOf("a2", "a", "slow") // after a1: 12000
	batch.addOf("d1", "d", "slow") // the held model's head less one, a turn on: 1999
	batch.addOf("d2", "d", "slow") // 2999
	batch.addOf("d3", "d", "fast") // from vtime: 11000
	batch.addOf("d4", "d", "slow") // after d3: 12000
	batch.addOf("e1", "e", "fast") // 11000
	batch.addOf("e2", "e", "slow") // after e1: 12000
	batch.addOf("f1", "f", "slow") // a run of one: 1999
	batch.mustRun(t, pool, batched)
	for i := range batch.ids {
		var one submitCall
		one.addOf(batch.ids[i], batch.owners[i], batch.models[i])
		one.mustRun(t, pool, single)
	}
	got, want := storeState(t, pool, batched), storeState(t, pool, single)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after the batch:\n%q\none by one:\n%q", got, want)
	}
	tags := tagsOf(t, pool, batched, batch.ids...)
	if want := []int64{11000, 12000, 1999, 2999, 11000, 12000, 11000, 12000, 1999}; !reflect.DeepEqual(tags, want) {
		t.Fatalf("tags %v, want %v", tags, want)
	}
}

// A task given back to the queue of a held model (a requeue, a release,
// a retry, a recovery) is tagged from the model's head too, as a submit
// is (migration 28), not from vtime.
func TestRequeuesTagFromTheModelsHead(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	schema := s.Schema()
	q := pgx.Identifier{schema}.Sanitize()
	heldModelState(t, pool, schema)
	var d submitCall
	d.addOf("d1", "d", "slow")
	d.mustRun(t, pool, schema)
	// d1 out of the queue, as the step before each way back leaves it.
	set := func(state string) {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE `+q+`.tasks SET `+state+`, tag = 0 WHERE id = 'd1'`); err != nil {
			t.Fatal(err)
		}
	}
	const processing = `status = 'processing', attempt = attempt + 1, lease_until = now() + interval '1 hour'`
	for _, c := range []struct {
		name string
		back func(attempt int) error
	}{
		{"requeue", func(int) error {
			set(`status = 'failed', attempt = attempt + 1, finished_at = now()`)
			return s.RequeueTask(ctx, "d1", false)
		}},
		{"release", func(attempt int) error {
			set(processing)
			return s.ReleaseTask(ctx, "d1", attempt+1)
		}},
		{"retry", func(attempt int) error {
			set(processing)
			return s.RetryTask(ctx, "d1", attempt+1, 0, "x")
		}},
		{"recovery", func(int) error {
			set(`status = 'processing', attempt = attempt + 1, lease_until = now() - interval '1 minute'`)
			rec, err := s.RecoverExpired(ctx, 100)
			if err == nil && rec.Requeued != 1 {
				err = fmt.Errorf("recovered %+v, want d1 requeued", rec)
			}
			return err
		}},
	} {
		var attempt int
		if err := pool.QueryRow(ctx, `SELECT attempt FROM `+q+`.tasks WHERE id = 'd1'`).Scan(&attempt); err != nil {
			t.Fatal(err)
		}
		if err := c.back(attempt); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// a's first task (1000) heads slow's queue, vtime is 10000.
		if tags := tagsOf(t, pool, schema, "d1"); tags[0] != 1999 {
			t.Errorf("%s: d1 tagged %d, want 1999 (one turn after the held model's head less one)", c.name, tags[0])
		}
	}
	var status imagegen.Status
	if err := pool.QueryRow(ctx, `SELECT status FROM `+q+`.tasks WHERE id = 'd1'`).Scan(&status); err != nil || status != imagegen.StatusPending {
		t.Fatalf("d1 is %s (%v), want pending", status, err)
	}
}
