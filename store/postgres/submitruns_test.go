package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// submitCall is one call of submit_tasks: a batch in owner order, of
// model "m" unless models names each task's.
type submitCall struct {
	ids, owners, models []string
	costs               []int64
	caps                []int32
}

func (c *submitCall) add(id, owner string, cost int64, maxPending int32) {
	c.ids, c.owners, c.costs, c.caps = append(c.ids, id), append(c.owners, owner), append(c.costs, cost), append(c.caps, maxPending)
}

// addOf adds a task of model at a cost of 1 with no pending cap; a call
// that names one task's model must name every task's.
func (c *submitCall) addOf(id, owner, model string) {
	c.add(id, owner, 1, 0)
	c.models = append(c.models, model)
}

// mustRun runs c on pool in schema and fails the test unless every task
// was created.
func (c submitCall) mustRun(t *testing.T, pool *pgxpool.Pool, schema string) {
	t.Helper()
	codes, _, err := c.run(context.Background(), pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	for i, code := range codes {
		if code != 1 {
			t.Fatalf("submit of %s: code %d", c.ids[i], code)
		}
	}
}

var submitAt = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// run calls submit_tasks on q in schema and returns its codes and balances.
func (c submitCall) run(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string) (codes []int32, balances []int64, err error) {
	n := len(c.ids)
	fill := func(s string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	models := c.models
	if models == nil {
		models = fill("m")
	}
	err = q.QueryRow(ctx, `SELECT code, balance FROM `+pgx.Identifier{schema}.Sanitize()+`.submit_tasks($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.ids, c.owners, fill(`{"prompt":"x"}`), models, c.costs, fill(""), fill(""), fill(""), c.caps, submitAt).Scan(&codes, &balances)
	return codes, balances, err
}

// storeState is what a submit leaves behind: accounts, the ledger and
// the tasks with their tags, in order.
func storeState(t *testing.T, pool *pgxpool.Pool, schema string) []string {
	t.Helper()
	q := pgx.Identifier{schema}.Sanitize()
	var out []string
	for _, sql := range []string{
		`SELECT owner, balance, entries, pending + (SELECT coalesce(sum(d), 0) FROM ` + q + `.pending_moves m WHERE m.owner = a.owner)
			FROM ` + q + `.accounts a ORDER BY owner`,
		`SELECT owner, n, kind, amount, ref, balance_after FROM ` + q + `.ledger ORDER BY owner, n`,
		`SELECT id, owner, cost, status, tag FROM ` + q + `.tasks ORDER BY seq`,
	} {
		rows, err := pool.Query(context.Background(), sql)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(vals...))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// The runs of submit_tasks (migration 13) end exactly as version 12's
// one task at a time: the same codes and balances, charges, ledger
// numbers, pending counts and fair-share tags, through every refusal in
// the middle of a run (balance short, queue full, an id submitted earlier
// in the run), an owner without an account, a run of one, and moves of
// claimed tasks folded on the way.
func TestSubmitRunsMatchOneByOne(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	now, old := pgtest.MigratedSchema(t, pool), pgtest.Schema(t, pool)
	if err := postgres.MigrateTo(ctx, pool, old, 12); err != nil {
		t.Fatal(err)
	}
	setup := func(schema string) {
		q := pgx.Identifier{schema}.Sanitize()
		if _, err := pool.Exec(ctx, `INSERT INTO `+q+`.accounts (owner, balance) VALUES ('a', 10), ('b', 5), ('d', 20), ('e', 1)`); err != nil {
			t.Fatal(err)
		}
		var pre submitCall
		pre.add("pre-a", "a", 1, 0)
		pre.add("pre-d1", "d", 1, 0)
		pre.add("pre-d2", "d", 1, 0)
		if _, _, err := pre.run(ctx, pool, schema); err != nil {
			t.Fatal(err)
		}
		// A claim of one of d's tasks: a move to fold.
		if _, err := pool.Exec(ctx, `UPDATE `+q+`.tasks SET status = 'processing', attempt = 1 WHERE id = 'pre-d1'`); err != nil {
			t.Fatal(err)
		}
	}
	setup(now)
	setup(old)

	var batch submitCall
	batch.add("a1", "a", 3, 0)
	batch.add("a3", "a", 4, 0)
	batch.add("a4", "a", 4, 0)  // balance short (2 left)
	batch.add("a5", "a", 1, 3)  // queue full: pre-a, a1, a3
	batch.add("a6", "a", 1, 4)  // the 4th
	batch.add("a6", "a", 1, 0)  // taken earlier in the run
	batch.add("a8", "a", 1, 0)  // the last credit
	batch.add("a9", "a", 1, 0)  // balance short
	batch.add("b1", "b", 2, 0)  // a run of one
	batch.add("c1", "c", 1, 0)  // no account
	batch.add("c2", "c", 1, 0)  // no account, a run
	batch.add("d1", "d", 1, 3)  // d has 1 pending after the fold: 2
	batch.add("d2", "d", 1, 3)  // 3
	batch.add("d3", "d", 1, 3)  // queue full
	batch.add("d4", "d", 1, 4)  // 4
	batch.add("e1", "e", 2, 0)  // balance short
	batch.add("e2", "e", 1, 10) // then taken
	batch.add("e3", "e", 1, 10) // balance short

	codes, balances, err := batch.run(ctx, pool, now)
	if err != nil {
		t.Fatal(err)
	}
	wantCodes, wantBalances, err := batch.run(ctx, pool, old)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(codes, wantCodes) || !reflect.DeepEqual(balances, wantBalances) {
		t.Fatalf("codes %v balances %v, one by one (version 12) %v %v", codes, balances, wantCodes, wantBalances)
	}
	if want := []int32{1, 1, 0, -2, 1, -1, 1, 0, 1, 0, 0, 1, 1, -2, 1, 0, 1, 0}; !reflect.DeepEqual(codes, want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	got, want := storeState(t, pool, now), storeState(t, pool, old)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after the batch:\n%q\none by one (version 12):\n%q", got, want)
	}
}

// A run with an id taken before fails (unique_violation since migration
// 16, serialization_failure before) and changes nothing; a lone task with
// a taken id is refused (-1) as before.
func TestSubmitRunWithATakenIDRaises(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	schema := pgtest.MigratedSchema(t, pool)
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, `INSERT INTO `+q+`.accounts (owner, balance) VALUES ('a', 10), ('b', 10)`); err != nil {
		t.Fatal(err)
	}
	var first submitCall
	first.add("x", "b", 1, 0)
	if _, _, err := first.run(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	var run submitCall
	run.add("y", "a", 1, 0)
	run.add("x", "a", 1, 0)
	_, _, err := run.run(ctx, pool, schema)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("run = %v, want unique_violation", err)
	}
	var balance, tasks int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT balance FROM `+q+`.accounts WHERE owner = 'a'),
		(SELECT count(*) FROM `+q+`.tasks WHERE owner = 'a')`).Scan(&balance, &tasks); err != nil {
		t.Fatal(err)
	}
	if balance != 10 || tasks != 0 {
		t.Fatalf("after the failed run a has balance %d and %d tasks, want 10 and 0", balance, tasks)
	}
	var lone submitCall
	lone.add("x", "a", 1, 0)
	codes, balances, err := lone.run(ctx, pool, schema)
	if err != nil || !reflect.DeepEqual(codes, []int32{-1}) || !reflect.DeepEqual(balances, []int64{10}) {
		t.Fatalf("lone task with a taken id: %v %v %v, want [-1] [10]", codes, balances, err)
	}
}

// Through the store, concurrent submits of one owner (batched however
// they arrive) with one id taken before: that submit alone is refused,
// every other is created and charged once.
func TestConcurrentSubmitsWithATakenID(t *testing.T) {
	ctx := context.Background()
	s := pgtest.NewStore(t, pgtest.Connect(t), postgres.Config{})
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: 100, Ref: "grant:a"}); err != nil {
		t.Fatal(err)
	}
	newTask := func(id string) *imagegen.Task {
		return &imagegen.Task{ID: id, Owner: "a", Request: prompt, Model: "m", Cost: 1}
	}
	if _, err := s.CreateTask(ctx, newTask("taken"), imagegen.CreateParams{}); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		errs := make(chan error, 16)
		for i := range 16 {
			id := fmt.Sprintf("t%d-%d", round, i)
			if i == 7 {
				id = "taken"
			}
			go func() {
				_, err := s.CreateTask(ctx, newTask(id), imagegen.CreateParams{})
				errs <- err
			}()
		}
		refused := 0
		for range 16 {
			if err := <-errs; err != nil {
				if !strings.Contains(err.Error(), "exists") {
					t.Fatalf("submit: %v", err)
				}
				refused++
			}
		}
		if refused != 1 {
			t.Fatalf("round %d: %d submits refused, want 1 (the taken id)", round, refused)
		}
	}
	bal, err := s.Balance(ctx, "a")
	if err != nil || bal != 100-1-5*15 {
		t.Fatalf("balance %d, %v; want %d", bal, err, 100-1-5*15)
	}
}

// Through the store, concurrent submits of two owners (batched however
// they arrive) where one of one owner's requests holds a value no row can
// keep (U+0000, which jsonb refuses): that submit alone fails, every
// other owner's submit is created and charged once.
func TestConcurrentSubmitsWithAnUnstorableRequest(t *testing.T) {
	ctx := context.Background()
	s := pgtest.NewStore(t, pgtest.Connect(t), postgres.Config{})
	for _, owner := range []string{"a", "b"} {
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 100, Ref: "grant:" + owner}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 5 {
		errs := make(chan error, 16)
		for i := range 16 {
			task := &imagegen.Task{ID: fmt.Sprintf("t%d-%d", round, i), Owner: "b", Request: prompt, Model: "m", Cost: 1}
			if i == 7 {
				task.Owner = "a"
				task.Request.Prompt = "a\x00b"
			}
			go func() {
				_, err := s.CreateTask(ctx, task, imagegen.CreateParams{})
				if err != nil && task.Owner == "a" {
					err = nil // refused, as it must be
				} else if err == nil && task.Owner == "a" {
					err = errors.New("the unstorable request was created")
				}
				errs <- err
			}()
		}
		for range 16 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	for owner, want := range map[string]int64{"a": 100, "b": 100 - 5*15} {
		if bal, err := s.Balance(ctx, owner); err != nil || bal != want {
			t.Fatalf("%s's balance %d, %v; want %d", owner, bal, err, want)
		}
	}
}
