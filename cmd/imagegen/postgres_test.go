package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// pgEnv is a migrated schema of the test's own on IMAGEGEN_TEST_POSTGRES.
// url carries an application_name unique to the test, so that the test
// can find (and cut) exactly the connections of its own processes.
type pgEnv struct {
	url, schema, app string
	pool             *pgxpool.Pool // the test's own connections
}

func newPGEnv(t testing.TB) pgEnv {
	t.Helper()
	pool := pgtest.Connect(t)
	schema := pgtest.Schema(t, pool)
	u, err := url.Parse(pgtest.URL(t))
	is.New(t).NoErr(err)
	q := u.Query()
	q.Set("application_name", "imagegen-"+schema)
	u.RawQuery = q.Encode()
	env := pgEnv{url: u.String(), schema: schema, app: "imagegen-" + schema, pool: pool}
	var out bytes.Buffer
	is.New(t).NoErr(run(ctx, []string{"migrate", "-postgres", env.url, "-schema", schema}, noEnv, &out, &out))
	return env
}

func (e pgEnv) args() []string { return []string{"-postgres", e.url, "-schema", e.schema} }

// service is the test's own view of the store, to submit and inspect
// tasks without going through a process.
func (e pgEnv) service(t *testing.T) *imagegen.Service {
	t.Helper()
	store, err := postgres.New(e.pool, postgres.Config{Schema: e.schema})
	is.New(t).NoErr(err)
	t.Cleanup(store.Close)
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(1), Logger: slog.New(slog.DiscardHandler)})
	is.New(t).NoErr(err)
	return svc
}

func TestMigrateCommand(t *testing.T) {
	is := is.New(t)
	pool := pgtest.Connect(t)
	schema := pgtest.Schema(t, pool)
	base := pgtest.URL(t)
	migrate := func(extra ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, append([]string{"migrate", "-postgres", base, "-schema", schema}, extra...), noEnv, &out, &out)
		return out.String(), err
	}
	// serve refuses a schema that was never migrated, saying what to do.
	err := run(ctx, []string{"serve", "-postgres", base, "-schema", schema}, noEnv, &bytes.Buffer{}, &bytes.Buffer{})
	is.True(err != nil && strings.Contains(err.Error(), "imagegen migrate"))

	out, err := migrate()
	is.NoErr(err)
	is.Equal(out, fmt.Sprintf("schema %s migrated from version 0 to %d\n", schema, postgres.LatestVersion()))
	out, err = migrate()
	is.NoErr(err)
	is.True(strings.Contains(out, "nothing to do"))
	out, err = migrate("-to", "1")
	is.NoErr(err)
	is.True(strings.Contains(out, fmt.Sprintf("from version %d to 1", postgres.LatestVersion())))
	out, err = migrate("-down")
	is.NoErr(err)
	is.True(strings.Contains(out, "to 0"))
	v, err := postgres.SchemaVersion(ctx, pool, schema)
	is.NoErr(err)
	is.Equal(v, 0)
}

// Bad flags and unreachable servers give one line that never shows the
// password.
func TestPostgresFlagErrors(t *testing.T) {
	is := is.New(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-redis", "redis://127.0.0.1:1/0", "-postgres", "postgres://127.0.0.1:1/db"}, "use one of -redis and -postgres"},
		{[]string{"worker", "-workers", "1"}, "-redis URL or -postgres URL is required"},
		{[]string{"credits", "show", "-owner", "u"}, "-redis URL or -postgres URL is required"},
		{[]string{"migrate"}, "-postgres URL is required"},
		{[]string{"worker", "-postgres-listen", "postgres://alice:s3cretpw@127.0.0.1:1/db"}, "-postgres-listen needs -postgres"},
		{[]string{"serve", "-postgres", "postgres://127.0.0.1:1/db", "-postgres-listen", "postgres://alice:s3cretpw@127.0.0.1:1/db?sslmode=disable"}, "-postgres-listen: postgres at 127.0.0.1:1 does not answer"},
		{[]string{"serve", "-postgres", "postgres://alice:s3cretpw@127.0.0.1:1/db?sslmode=disable"}, "does not answer"},
		{[]string{"migrate", "-postgres", "postgres://alice:s3cretpw@127.0.0.1:1/db?connect_timeout=nope"}, "not a valid PostgreSQL URL"},
		{[]string{"keys", "list", "-owner", "u", "-postgres", "postgres://alice:s3cret%zz@127.0.0.1:1/db"}, "not a valid PostgreSQL URL"},
		// A password with an unencoded '@' (pgx cuts at the first '@' and
		// masks only what comes before it) or '/': no part of it shows.
		{[]string{"migrate", "-postgres", "postgres://alice:s3cret@t4il@127.0.0.1:bad/db"}, "not a valid PostgreSQL URL"},
		{[]string{"migrate", "-postgres", "postgres://alice:s3cret@t4il@127.0.0.1:1/db?connect_timeout=nope"}, "invalid connect_timeout"},
		{[]string{"serve", "-postgres", "postgres://alice:s3cret@t4il@127.0.0.1:1/db?sslmode=disable"}, "does not answer"},
		{[]string{"serve", "-postgres", "postgres://127.0.0.1:1/db", "-postgres-listen", "postgres://alice:s3cret@t4il@127.0.0.1:1/db?sslmode=disable"}, "does not answer"},
		{[]string{"migrate", "-postgres", "postgres://alice:s3cret/t4il@127.0.0.1:1/db"}, "not a valid PostgreSQL URL"},
		{[]string{"migrate", "-postgres", "host=127.0.0.1 port=bad user=alice password='s3cret t4il'"}, "not a valid PostgreSQL URL"},
		// pgx quotes a fragment "as is": one that runs past the last '@',
		// or that ends with a backslash.
		{[]string{"migrate", "-postgres", "postgres://alice:s3cret@:t4il%zz@127.0.0.1:1/db"}, "not a valid PostgreSQL URL"},
		{[]string{"migrate", "-postgres", `postgres://alice:s3cret%\/t4il@127.0.0.1:1/db`}, "not a valid PostgreSQL URL"},
		{[]string{"migrate", "-postgres", `postgres://alice:s3"cret@:%"t4il@127.0.0.1:1/db`}, "not a valid PostgreSQL URL"},
	}
	for _, c := range cases {
		err := run(ctx, c.args, noEnv, &bytes.Buffer{}, &bytes.Buffer{})
		is.True(err != nil)
		msg := err.Error()
		if !strings.Contains(msg, c.want) || strings.Contains(msg, "s3cret") || strings.Contains(msg, "t4il") || strings.Contains(msg, "\n") {
			t.Errorf("%v: got %q, want one line with %q and no password", c.args, msg, c.want)
		}
	}
}

// An API process and a worker process on one schema finish a task; the
// worker is woken by NOTIFY (its poll interval does not matter).
func TestPostgresServeAndWorker(t *testing.T) {
	is := is.New(t)
	env := newPGEnv(t)
	key := "pg-serve-key-0123456789"
	_, base := startServeProcess(t, append(env.args(), "-demo-key", key, "-demo-credits", "5", "-workers", "0")...)
	w := startImagegen(t, append([]string{"worker", "-placeholder-delay", "0", "-workers", "2"}, env.args()...)...)

	code, sub := httpCall(t, "POST", base+"/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a lighthouse"}`)
	is.Equal(code, http.StatusCreated)
	is.Equal(sub["credits_remaining"], 4.0)
	// Prefer: wait answers as soon as the worker (another process)
	// finishes: the API process hears of it through LISTEN/NOTIFY. Without
	// it, the answer would come only when the minute's wait ran out: the
	// bound tells the two apart, whatever the machine's speed.
	start := time.Now()
	code, task := longPoll(t, base+"/api/v1/tasks/"+sub["task_id"].(string), key)
	is.Equal(code, http.StatusOK)
	is.Equal(task["status"], "success")
	is.True(time.Since(start) < time.Minute) // not the wait's end
	is.Equal(len(task["images"].([]any)), 1)
	w.stop(t)
}

// A worker killed with SIGKILL in the middle of a generation loses its
// lease; another finishes the task exactly once, charged once, with no
// refund.
func TestPostgresKilledWorkerTaskFinishedByAnother(t *testing.T) {
	env := newPGEnv(t)
	killedWorkerTaskFinishedByAnother(t, env.service(t), env.args()...)
}

// terminate cuts every connection of the test's processes (found by
// their application_name) and returns how many it cut.
func (e pgEnv) terminate(t *testing.T) int {
	var n int
	err := e.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1`, e.app).Scan(&n)
	is.New(t).NoErr(err)
	return n
}

// The store's connections are cut again and again while tasks are
// submitted and generated: submits answer 201 or a 5xx JSON error, the
// processes recover without a restart, every acknowledged task
// succeeds, and every charge belongs to a task.
func TestPostgresConnectionsCutWhileTasksRun(t *testing.T) {
	is := is.New(t)
	env := newPGEnv(t)
	key := "pg-outage-key-0123456789"
	const credits = 40
	_, base := startServeProcess(t, append(env.args(), "-demo-key", key, "-demo-credits", fmt.Sprint(credits),
		"-rate-limit", "1000", "-placeholder-delay", "50ms", "-workers", "2", "-lease", "2s")...)
	body := `{"scene":"text-to-image","prompt":"a lighthouse"}`

	var acked []string
	fiveXX, cut := 0, 0
	for i := range 30 {
		if i%3 == 0 {
			cut += env.terminate(t)
		}
		code, resp := httpCall(t, "POST", base+"/api/v1/generate", key, body)
		switch {
		case code == http.StatusCreated:
			acked = append(acked, resp["task_id"].(string))
		case code >= 500:
			fiveXX++
			is.Equal(resp["error"].(map[string]any)["code"], "internal_error") // JSON, not a dropped connection
		default:
			t.Fatalf("submit answered %d %v", code, resp)
		}
	}
	is.True(cut > 0)
	t.Logf("%d connections cut; %d submits acknowledged, %d answered 5xx", cut, len(acked), fiveXX)

	// Without a restart, the same process serves again.
	testenv.Eventually(t, 20*time.Second, "submit works again", func() bool {
		code, resp := httpCall(t, "POST", base+"/api/v1/generate", key, body)
		if code == http.StatusCreated {
			acked = append(acked, resp["task_id"].(string))
		}
		return code == http.StatusCreated
	})
	svc := env.service(t)
	for _, id := range acked {
		testenv.Eventually(t, 60*time.Second, "task "+id+" succeeds", func() bool {
			task, err := svc.Task(ctx, "demo-1", id)
			is.True(!errors.Is(err, imagegen.ErrTaskNotFound)) // never lost
			return err == nil && task.Status == imagegen.StatusSuccess
		})
	}
	// A submit answered 5xx may still have committed: every charge must
	// have its task, and the balance must match the ledger.
	ledger, err := svc.Ledger(ctx, "demo-1")
	is.NoErr(err)
	charges := 0
	for _, e := range ledger {
		if e.Kind == imagegen.LedgerCharge {
			charges++
			_, err := svc.Task(ctx, "demo-1", strings.TrimPrefix(e.Ref, imagegen.ChargeRefPrefix))
			is.NoErr(err)
		}
	}
	is.True(charges >= len(acked))
	balance, err := svc.Balance(ctx, "demo-1")
	is.NoErr(err)
	is.Equal(balance, int64(credits-charges))
}

// 1000 concurrent submits on a balance of 300 through two API processes:
// exactly 300 are accepted, the rest refused with 403, and the balance
// ends at 0.
func TestPostgresConcurrentSubmitsTwoServes(t *testing.T) {
	is := is.New(t)
	env := newPGEnv(t)
	key := "pg-rush-key-0123456789"
	common := append(env.args(), "-demo-key", key, "-demo-credits", "300", "-rate-limit", "5000", "-workers", "0")
	_, a := startServeProcess(t, common...)
	_, b := startServeProcess(t, common...)

	const submits, parallel = 1000, 50
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		errs   []error
		wg     sync.WaitGroup
		next   = make(chan int)
	)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				code, _, _, err := sendRequest("POST", []string{a, b}[i%2]+"/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a lighthouse"}`, "")
				mu.Lock()
				counts[code]++
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	for i := range submits {
		next <- i
	}
	close(next)
	wg.Wait()
	is.NoErr(errors.Join(errs...))
	is.Equal(counts[http.StatusCreated], 300)
	is.Equal(counts[http.StatusForbidden], submits-300)
	balance, err := env.service(t).Balance(ctx, "demo-1")
	is.NoErr(err)
	is.Equal(balance, int64(0))
}
