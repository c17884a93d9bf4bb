package postgres_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/ratelimit/postgres"
)

// BenchmarkAllowHotKeys is the limiter under load on a few hot keys: 16
// keys, 16 concurrent callers, on the PostgreSQL named by
// IMAGEGEN_TEST_POSTGRES. Accepted: a limit no key reaches in a 10ms
// window, so every call records a request (the write path) while each
// key's log stays small, as a limit of 10 a minute keeps it in
// production; Refused: the default policy (10 a minute), so after each
// key's first ten calls every call is a refusal (hot keys over their
// limit). Besides
// ns/op it reports WAL-B/op, the write-ahead log the server wrote per
// call (pg_current_wal_lsn around the run; the whole server's WAL, so
// other clients of the same server add to it: read the smallest of a
// few runs).
func BenchmarkAllowHotKeys(b *testing.B) {
	pool := pgtest.ConnectPool(b, 20)
	schema := pgtest.MigratedSchema(b, pool)
	for _, c := range []struct {
		name   string
		limit  int
		window time.Duration
	}{{"Accepted", 1 << 30, 10 * time.Millisecond}, {"Refused", 10, time.Minute}} {
		b.Run(c.name, func(b *testing.B) {
			lim, err := postgres.New(pool, postgres.Config{Limit: c.limit, Window: c.window, Schema: schema, Prefix: "bench-" + c.name + ":"})
			if err != nil {
				b.Fatal(err)
			}
			defer lim.Close()
			benchHotKeys(b, pool, lim, 16, 16)
		})
	}
	// Lone: one caller, so every check is a batch of one (its latency,
	// round trip and commit included), on the Accepted policy.
	b.Run("Lone", func(b *testing.B) {
		lim, err := postgres.New(pool, postgres.Config{Limit: 1 << 30, Window: 10 * time.Millisecond, Schema: schema, Prefix: "bench-lone:"})
		if err != nil {
			b.Fatal(err)
		}
		defer lim.Close()
		benchHotKeys(b, pool, lim, 16, 1)
	})
}

// benchHotKeys calls lim.Allow from callers goroutines (one: the
// benchmark's own, in turn) spread over keys keys and reports the WAL
// written per call.
func benchHotKeys(b *testing.B, pool *pgxpool.Pool, lim *postgres.Limiter, keys, callers int) {
	ctx := context.Background()
	names := make([]string, keys)
	for i := range names {
		names[i] = "hot-" + strconv.Itoa(i)
		for range 10 { // each key's row exists, and is over a limit of ten, before the clock starts
			if _, err := lim.Allow(ctx, names[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	walBefore := walLSN(b, pool)
	var next atomic.Uint64
	b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	if callers == 1 {
		for i := range b.N {
			if _, err := lim.Allow(ctx, names[i%keys]); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.RunParallel(func(pb *testing.PB) {
			i := next.Add(1)
			for pb.Next() {
				i++
				if _, err := lim.Allow(ctx, names[i%uint64(keys)]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.StopTimer()
	var wal float64
	if err := pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)`, walBefore).Scan(&wal); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(wal/float64(b.N), "WAL-B/op")
}

func walLSN(b *testing.B, pool *pgxpool.Pool) string {
	var lsn string
	if err := pool.QueryRow(context.Background(), `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		b.Fatal(err)
	}
	return lsn
}
