package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/redisurl"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	"github.com/imagegen/imagegen/store/postgres"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// BenchmarkServerCPU measures what one task costs the database server:
// the CPU time (utime + stime in /proc/PID/stat) of the server's
// processes while `imagegen serve -workers 0` takes b.N HTTP submits of
// 30 owners from 32 clients (each with its key lookup and rate check, at
// a limit of 10^8 a minute, which the rate limiter keeps as a sorted set
// of times per key; redis-default-limit runs serve's default limit of
// 10 a minute, kept as a log string per key, with as many owners as
// that takes for none of them to be refused),
// reported as cpu-µs/submit, and while 16 workers then run them all
// (claim, image bytes, success; an instant model's 1x1 PNG, so that the
// phase is not stretched by image encoding), as cpu-µs/complete. Redis runs as a
// redis-server of the benchmark's own; a Cluster as three masters and
// three replicas (only the masters' CPU counts; replicas apply the same
// writes again), with each master's share of the keys and of the
// commands logged; PostgreSQL counts only the backends of the two
// processes' own connections (found by application_name; the server's
// WAL writer and checkpointer are not counted).
func BenchmarkServerCPU(b *testing.B) {
	b.Run("redis", func(b *testing.B) {
		r := redistest.StartServer(b, 0)
		url := "redis://" + r.Addr() + "/0"
		measureServerCPU(b, []string{"-redis", url}, func() []int { return []int{r.PID()} }, callgrindPhases(b, r))
	})
	b.Run("redis-default-limit", func(b *testing.B) {
		r := redistest.StartServer(b, 0)
		url := "redis://" + r.Addr() + "/0"
		measureServerCPUAt(b, defaultLimitLoad(b.N), []string{"-redis", url}, func() []int { return []int{r.PID()} }, callgrindPhases(b, r))
	})
	b.Run("cluster", func(b *testing.B) {
		c := redistest.StartCluster(b, 3)
		masters := c.Masters(b)
		pids := func() []int {
			var out []int
			for _, m := range masters {
				out = append(out, m.PID())
			}
			return out
		}
		var before map[string]int64
		measureServerCPU(b, []string{"-redis", c.URL()}, pids, func(p phase) {
			switch p {
			case submitPhase:
				before = commandCounts(b, masters)
				return
			case completePhase:
				return
			}
			logShares(b, "keys", c.KeyShares(b))
			cmds := map[string]float64{}
			var total float64
			for addr, n := range commandCounts(b, masters) {
				cmds[addr] = float64(n - before[addr])
				total += cmds[addr]
			}
			for a := range cmds {
				cmds[a] /= total
			}
			logShares(b, "commands", cmds)
		})
	})
	b.Run("postgres", func(b *testing.B) {
		env := newPGEnv(b)
		pids := func() []int {
			rows, err := env.pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, env.app)
			if err != nil {
				b.Fatal(err)
			}
			defer rows.Close()
			var out []int
			for rows.Next() {
				var pid int
				if err := rows.Scan(&pid); err != nil {
					b.Fatal(err)
				}
				out = append(out, pid)
			}
			return out
		}
		measureServerCPU(b, env.args(), pids, nil)
	})
}

// phase is where a BenchmarkServerCPU run is: a phaseHook is called
// with submitPhase before the submits, completePhase between the submits
// and the completions, and endPhase after the completions.
type phase int

const (
	submitPhase phase = iota
	completePhase
	endPhase
)

// phaseHook, when not nil, runs at each phase's start and at the end.
type phaseHook func(phase)

// callgrindPhases zeroes the instruction counts of r (run under
// callgrind: IMAGEGEN_BENCH_CALLGRIND=own and a wrapper redis-server on
// PATH, see redistest.CallgrindOwnServers) at each phase's start and
// dumps them at its end: the run's first dump is b.N tasks' submits,
// its second their completions.
func callgrindPhases(b *testing.B, r *redistest.Server) phaseHook {
	var dump func()
	return func(p phase) {
		if dump != nil {
			dump()
		}
		if p != endPhase {
			dump = redistest.CallgrindOwn(b, r.PID())
		}
	}
}

// cpuLoad is who submits in a BenchmarkServerCPU run: how many owners
// (one API key each) and serve's rate limit a minute (0: its default).
type cpuLoad struct{ owners, rateLimit int }

// warmSubmits are the submits before the measured phases (connections,
// scripts, statements).
const warmSubmits = 100

// largeLimitLoad is 30 owners at a limit they never reach.
var largeLimitLoad = cpuLoad{owners: 30, rateLimit: 100_000_000}

// defaultLimitLoad is serve's default limit (10 a minute) with enough
// owners that none is refused: the submits go round the keys, so a key
// makes at most one warm-up submit (with warmSubmits keys or more) and
// at most 9 of the n measured ones (with n/9 keys or more).
func defaultLimitLoad(n int) cpuLoad { return cpuLoad{owners: max((n+8)/9, warmSubmits)} }

// measureServerCPU is measureServerCPUAt with largeLimitLoad.
func measureServerCPU(b *testing.B, storeArgs []string, pids func() []int, hook phaseHook) {
	measureServerCPUAt(b, largeLimitLoad, storeArgs, pids, hook)
}

// measureServerCPUAt runs the two phases with load on the store of
// storeArgs; pids lists the server processes to count; hook, when set,
// runs at each measured phase's start and at the end.
func measureServerCPUAt(b *testing.B, load cpuLoad, storeArgs []string, pids func() []int, hook phaseHook) {
	var keys []string
	args := []string{"-workers", "0", "-demo-credits", "100000000"}
	if load.rateLimit > 0 {
		args = append(args, "-rate-limit", strconv.Itoa(load.rateLimit))
	}
	args = append(args, storeArgs...)
	for i := range load.owners {
		key := fmt.Sprintf("cpu-bench-key-%04d-0123456789", i)
		keys = append(keys, key)
		args = append(args, "-demo-key", key)
	}
	_, base := startServeProcess(b, args...)
	submitN(b, base, keys, warmSubmits)
	store, workReady := openStore(b, storeArgs)
	runAll(b, store, workReady)

	if hook == nil {
		hook = func(phase) {}
	}
	hook(submitPhase)
	n := b.N
	b.ResetTimer()
	cpu0 := cpuOf(b, pids())
	submitN(b, base, keys, n)
	cpu1 := cpuOf(b, pids())
	hook(completePhase)
	runAll(b, store, workReady)
	cpu2 := cpuOf(b, pids())
	b.StopTimer()
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(n), "cpu-µs/submit")
	b.ReportMetric(float64((cpu2-cpu1).Microseconds())/float64(n), "cpu-µs/complete")
	hook(endPhase)
}

// submitN submits n tasks over HTTP from 32 clients, round the keys.
func submitN(b *testing.B, base string, keys []string, n int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}, Timeout: time.Minute}
	var wg sync.WaitGroup
	next := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range next {
				key := keys[i%len(keys)]
				r := submitOnce(client, base, "", key, i)
				if r.code != http.StatusCreated {
					b.Errorf("submit: %d %s", r.code, r.body)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// openStore opens the store of storeArgs for the completion phase,
// closed when the benchmark ends; workReady is PostgreSQL's.
func openStore(b *testing.B, storeArgs []string) (store imagegen.Store, workReady <-chan struct{}) {
	if storeArgs[0] == "-redis" {
		rdb, _, err := redisurl.Open(storeArgs[1])
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = rdb.Close() })
		s, err := redisstore.New(rdb, redisstore.Config{})
		if err != nil {
			b.Fatal(err)
		}
		return s, nil
	}
	pool, err := pgxpool.New(ctx, storeArgs[1])
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	s, err := postgres.New(pool, postgres.Config{Schema: storeArgs[3]})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s, s.WorkReady()
}

// runAll runs 16 workers of an instant model (one 1x1 PNG a task) on
// store until no task is pending or processing.
func runAll(b *testing.B, store imagegen.Store, workReady <-chan struct{}) {
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(1),
		WorkerConfig: imagegen.WorkerConfig{Workers: 16, WorkReady: workReady}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		st, err := store.QueueStats(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.Pending == 0 && st.Processing == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("tasks still queued after 10 minutes: %+v", st)
		}
		time.Sleep(200 * time.Millisecond) // QueueStats reads every shard: keep its share of the count small
	}
}

// cpuOf sums the user and system CPU time of the processes (a backend
// that has gone counts nothing).
func cpuOf(b *testing.B, pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		if d, err := testenv.ProcessCPU(pid); err == nil {
			sum += d
		}
	}
	return sum
}

// commandCounts is each master's total_commands_processed.
func commandCounts(b *testing.B, masters []*redistest.Server) map[string]int64 {
	out := map[string]int64{}
	for _, m := range masters {
		rdb := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
		info, err := rdb.Info(context.Background(), "stats").Result()
		_ = rdb.Close()
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
				out[m.Addr()], _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return out
}

func logShares(b *testing.B, what string, shares map[string]float64) {
	addrs := make([]string, 0, len(shares))
	for a := range shares {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	var parts []string
	for _, a := range addrs {
		parts = append(parts, fmt.Sprintf("%s %.1f%%", a, 100*shares[a]))
	}
	b.Logf("share of %s per master: %s", what, strings.Join(parts, ", "))
}
