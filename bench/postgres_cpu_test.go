package bench

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// The CPU benchmarks run BenchmarkPostgresSubmit's and
// BenchmarkPostgresPipeline's work for imagegen and River and report
// what the server did for it, which other processes on a shared machine
// move less than they move wall-clock rates:
//
//   - pgcpu-µs/op: CPU time (utime + stime from /proc/PID/stat, 10 ms
//     ticks) of the PostgreSQL backends serving the benchmark's pool
//     (application_name imagegen-bench-cpu), per task; the server must
//     run on this machine;
//   - wal-B/op: WAL written (pg_current_wal_lsn), the whole server's;
//   - xact/op: commits (pg_stat_database, the whole database's; its
//     statistics are flushed about once a second, so a rough figure).
//
//	cd bench && IMAGEGEN_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	  go test -run '^$' -bench 'Postgres(Submit|Pipeline)CPU' -benchtime 3000x

const cpuApp = "imagegen-bench-cpu"

// cpuPool is a pool whose backends can be told apart by their
// application_name.
func cpuPool(b *testing.B) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(pgtest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 32
	cfg.ConnConfig.RuntimeParams["application_name"] = cpuApp
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// serverUse is a reading of the server's counters.
type serverUse struct {
	wal, xact int64
	cpu       map[int32]float64 // seconds, by backend pid
}

func readServerUse(b *testing.B, pool *pgxpool.Pool) serverUse {
	u := serverUse{cpu: map[int32]float64{}}
	if err := pool.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0',
		(SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())`).Scan(&u.wal, &u.xact); err != nil {
		b.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, cpuApp)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	for _, pid := range pids {
		cpu, err := processCPU(int(pid))
		if err != nil {
			b.Skipf("the backends' CPU is not readable (is PostgreSQL on this machine?): %v", err)
		}
		u.cpu[pid] = cpu
	}
	return u
}

// reportServerUse reports the server's work since before, per task.
func reportServerUse(b *testing.B, pool *pgxpool.Pool, before serverUse) {
	time.Sleep(time.Second) // statistics flush
	after := readServerUse(b, pool)
	var cpu float64
	for pid, c := range after.cpu {
		cpu += c - before.cpu[pid]
	}
	n := float64(b.N)
	b.ReportMetric(cpu*1e6/n, "pgcpu-µs/op")
	b.ReportMetric(float64(after.wal-before.wal)/n, "wal-B/op")
	b.ReportMetric(float64(after.xact-before.xact)/n, "xact/op")
}

func BenchmarkPostgresSubmitCPU(b *testing.B) {
	b.Run("postgres-store", func(b *testing.B) {
		pool := cpuPool(b)
		store := pgtest.NewStore(b, pool, postgres.Config{})
		before := readServerUse(b, pool)
		submitTasks(b, store)
		b.StopTimer()
		reportServerUse(b, pool, before)
	})
	b.Run("river-insert", func(b *testing.B) {
		pool := cpuPool(b)
		client := newRiver(b, pool, 0)
		before := readServerUse(b, pool)
		insertRiverJobs(b, client)
		b.StopTimer()
		reportServerUse(b, pool, before)
	})
}

func BenchmarkPostgresPipelineCPU(b *testing.B) {
	b.Run("postgres-store", func(b *testing.B) {
		pool := cpuPool(b)
		store := pgtest.NewStore(b, pool, postgres.Config{})
		runServicePipeline(b, store, store.WorkReady(), serverUseOf(b, pool))
	})
	b.Run("river", func(b *testing.B) {
		pool := cpuPool(b)
		runRiverPipeline(b, pool, serverUseOf(b, pool))
	})
}

// serverUseOf is a probe of what the server did for pool over a
// pipeline's timed part (readServerUse, then reportServerUse).
func serverUseOf(b *testing.B, pool *pgxpool.Pool) probe {
	return func() func() {
		before := readServerUse(b, pool)
		return func() { reportServerUse(b, pool, before) }
	}
}
