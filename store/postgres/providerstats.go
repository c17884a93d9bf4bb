package postgres

import (
	"context"
	"time"

	"github.com/imagegen/imagegen"
)

// Provider statistics are rows of the provider_stats table (migration 4):
// one per minute, kind ('r' for a provider and outcome, 'f' for a
// fallback's from and to) and pair, holding the count.

// statsTrimEvery is how often a Store removes buckets past
// ProviderStatsRetention (in its own statement after an add, so the
// add's row locks are never held while old rows are deleted).
const statsTrimEvery = 10 * time.Minute

// AddProviderStats adds st to the current minute's rows in one INSERT …
// ON CONFLICT DO UPDATE, rows in a fixed order so that concurrent flushes
// of several workers cannot deadlock.
func (s *Store) AddProviderStats(ctx context.Context, st imagegen.ProviderStats) error {
	st = imagegen.SumProviderStats(st) // one row per pair (ON CONFLICT may touch a row once), sorted
	if st.Empty() {
		return nil
	}
	n := len(st.Requests) + len(st.Fallbacks)
	kinds, as, bs, counts := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]int64, 0, n)
	for _, f := range st.Fallbacks {
		kinds, as, bs, counts = append(kinds, "f"), append(as, f.From), append(bs, f.To), append(counts, f.N)
	}
	for _, r := range st.Requests {
		kinds, as, bs, counts = append(kinds, "r"), append(as, r.Provider), append(bs, r.Outcome), append(counts, r.N)
	}
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.provider_stats AS p (bucket, kind, a, b, n)
		SELECT date_trunc('minute', {now}), u.kind, u.a, u.b, u.n
		FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS u(kind, a, b, n, i)
		ORDER BY u.i
		ON CONFLICT (bucket, kind, a, b) DO UPDATE SET n = p.n + excluded.n`),
		s.nowArg(), kinds, as, bs, counts)
	if err != nil {
		return s.wrapErr("add provider stats", err)
	}
	s.maybeTrimStats(ctx)
	return nil
}

// maybeTrimStats deletes the buckets older than ProviderStatsRetention,
// at most once per statsTrimEvery per Store; a failure waits for the
// next time (reads never reach that far back).
func (s *Store) maybeTrimStats(ctx context.Context) {
	now := time.Now().Unix()
	last := s.statsTrimmed.Load()
	if now-last < int64(statsTrimEvery/time.Second) || !s.statsTrimmed.CompareAndSwap(last, now) {
		return
	}
	_, _ = s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.provider_stats
		WHERE bucket < date_trunc('minute', {now}) - $2 * interval '1 microsecond'`),
		s.nowArg(), micros(imagegen.ProviderStatsRetention))
}

// ProviderStats sums the rows of the minutes of the last window.
func (s *Store) ProviderStats(ctx context.Context, window time.Duration) (imagegen.ProviderStats, error) {
	window = min(max(window, 0), imagegen.ProviderStatsRetention)
	rows, err := s.pool.Query(ctx, s.sql(`SELECT kind, a, b, sum(n)::bigint FROM {schema}.provider_stats
		WHERE bucket >= date_trunc('minute', {now} - $2 * interval '1 microsecond') AND bucket <= {now}
		GROUP BY kind, a, b`), s.nowArg(), micros(window))
	if err != nil {
		return imagegen.ProviderStats{}, s.wrapErr("provider stats", err)
	}
	defer rows.Close()
	var st imagegen.ProviderStats
	for rows.Next() {
		var kind, a, b string
		var n int64
		if err := rows.Scan(&kind, &a, &b, &n); err != nil {
			return imagegen.ProviderStats{}, s.wrapErr("provider stats", err)
		}
		if kind == "f" {
			st.Fallbacks = append(st.Fallbacks, imagegen.FallbackCount{From: a, To: b, N: n})
		} else {
			st.Requests = append(st.Requests, imagegen.ProviderCount{Provider: a, Outcome: b, N: n})
		}
	}
	if err := rows.Err(); err != nil {
		return imagegen.ProviderStats{}, s.wrapErr("provider stats", err)
	}
	return st, nil
}
