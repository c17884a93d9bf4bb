package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// SetOwnerWeight sets owner's fair-share weight (accounts.weight; an
// owner without an account gets one with no credits).
func (s *Store) SetOwnerWeight(ctx context.Context, owner string, weight int) error {
	if err := storekit.CheckOwnerWeight(owner, weight); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.accounts (owner, balance, weight) VALUES ($1, 0, $2)
		ON CONFLICT (owner) DO UPDATE SET weight = EXCLUDED.weight`), owner, weight)
	return s.wrapErr("set owner weight", err)
}

// OwnerWeight returns owner's fair-share weight.
func (s *Store) OwnerWeight(ctx context.Context, owner string) (int, error) {
	var w int
	err := s.pool.QueryRow(ctx, s.sql(`SELECT weight FROM {schema}.accounts WHERE owner = $1`), owner).Scan(&w)
	if errors.Is(err, pgx.ErrNoRows) {
		return 1, nil
	}
	return w, s.wrapErr("owner weight", err)
}

// PauseModel holds back model's starts until d from now, unless a
// pause already lasts longer.
func (s *Store) PauseModel(ctx context.Context, model string, d time.Duration) error {
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.models AS m (model, paused_until)
		VALUES ($2, {now} + $3 * interval '1 microsecond')
		ON CONFLICT (model) DO UPDATE SET paused_until = greatest(m.paused_until, EXCLUDED.paused_until)`),
		s.nowArg(), model, micros(d))
	return s.wrapErr("pause model", err)
}

// schedulerHead is the first $2 pending tasks in claim order: the
// first $2 of each model's queue, the first $2 parked tasks and the
// first $2 delayed ones, merged.
const schedulerHead = `WITH RECURSIVE ` + pendingModels + `, head AS MATERIALIZED (SELECT h.owner, h.model, h.run_after
	FROM (SELECT h.owner, h.model, h.run_after, h.tag, h.seq
		FROM queues q CROSS JOIN LATERAL (SELECT p.owner, p.model, p.run_after, p.tag, p.seq FROM {schema}.tasks p
			WHERE ` + inModelQueue + ` AND p.model = q.model ORDER BY p.tag, p.seq LIMIT $2) h
		WHERE q.model IS NOT NULL
		UNION ALL
		(SELECT p.owner, p.model, p.run_after, p.tag, p.seq FROM {schema}.tasks p
			WHERE p.status = 'pending' AND p.parked ORDER BY p.tag, p.seq LIMIT $2)
		UNION ALL
		(SELECT p.owner, p.model, p.run_after, p.tag, p.seq FROM {schema}.tasks p
			WHERE p.status = 'pending' AND p.delayed ORDER BY p.tag, p.seq LIMIT $2)) h
	ORDER BY h.tag, h.seq LIMIT $2)`

// SchedulerStats reports what l holds back among the first
// SchedulerScan pending tasks in claim order, the owners with the most
// pending tasks among them, and the paused models.
func (s *Store) SchedulerStats(ctx context.Context, l imagegen.Limits) (imagegen.SchedulerStats, error) {
	st := imagegen.SchedulerStats{Held: map[imagegen.HoldReason]int{}, Paused: map[string]time.Time{}}
	models, caps, rates := modelLimits(l)
	rows, err := s.pool.Query(ctx, s.sql(schedulerHead+`, paused AS (SELECT EXISTS (SELECT 1 FROM {schema}.models
			WHERE paused_until > {now}) AS any)
		SELECT r, count(*) FROM (
			SELECT {schema}.held_reason(h.owner, h.model, {now}, $3, coalesce(m.cap, 0), coalesce(m.rate, 0), paused.any, false) AS r
			FROM head h CROSS JOIN paused
			LEFT JOIN unnest($4::text[], $5::integer[], $6::integer[]) AS m(model, cap, rate) ON m.model = h.model
			WHERE h.run_after <= {now}) held
		WHERE r IS NOT NULL GROUP BY r`),
		s.nowArg(), imagegen.SchedulerScan, l.OwnerConcurrency, models, caps, rates)
	if err != nil {
		return st, s.wrapErr("scheduler stats", err)
	}
	for rows.Next() {
		var why string
		var n int
		if err := rows.Scan(&why, &n); err != nil {
			rows.Close()
			return st, s.wrapErr("scheduler stats", err)
		}
		st.Held[imagegen.HoldReason(why)] = n
	}
	if err := rows.Err(); err != nil {
		return st, s.wrapErr("scheduler stats", err)
	}
	rows, err = s.pool.Query(ctx, s.sql(schedulerHead+`
		SELECT owner, count(*), (SELECT count(*) FROM {schema}.tasks p
			WHERE p.status = 'processing' AND p.lease_until > {now} AND p.owner = head.owner)
		FROM head GROUP BY owner ORDER BY 2 DESC, 1 LIMIT $3`), s.nowArg(), imagegen.SchedulerScan, imagegen.BusiestOwners)
	if err != nil {
		return st, s.wrapErr("scheduler stats", err)
	}
	for rows.Next() {
		var o imagegen.OwnerLoad
		if err := rows.Scan(&o.Owner, &o.Pending, &o.Running); err != nil {
			rows.Close()
			return st, s.wrapErr("scheduler stats", err)
		}
		st.Busiest = append(st.Busiest, o)
	}
	if err := rows.Err(); err != nil {
		return st, s.wrapErr("scheduler stats", err)
	}
	rows, err = s.pool.Query(ctx, s.sql(`SELECT model, paused_until FROM {schema}.models WHERE paused_until > {now}`), s.nowArg())
	if err != nil {
		return st, s.wrapErr("scheduler stats", err)
	}
	defer rows.Close()
	for rows.Next() {
		var model string
		var until time.Time
		if err := rows.Scan(&model, &until); err != nil {
			return st, s.wrapErr("scheduler stats", err)
		}
		st.Paused[model] = until.UTC()
	}
	return st, s.wrapErr("scheduler stats", rows.Err())
}
