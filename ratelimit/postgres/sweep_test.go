package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/ratelimit/postgres"
)

// One round of the sweep deletes every idle key's row, however many
// there are: a round that deleted one batch of 500 left the table
// growing whenever more than 500 keys a SweepInterval went idle (a
// client rotating addresses through the failed-authentication limit).
func TestSweepRoundDeletesEveryIdleKey(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	schema := pgtest.MigratedSchema(t, pool)
	clock := imagegentest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	lim := newPostgres(t, pool, postgres.Config{Limit: 2, Window: time.Minute, Schema: schema, SweepInterval: time.Hour, Now: clock.Now})
	table := `"` + schema + `".rate_limits`
	const idle, live = 1700, 3
	_, err := pool.Exec(ctx, `INSERT INTO `+table+` (key, window_us, times)
		SELECT 'rl:idle-' || i, 60000000, ARRAY[$1::bigint] FROM generate_series(1, $2::int) AS i`,
		clock.Now().UnixMicro(), idle)
	is.NoErr(err)
	clock.Advance(time.Minute) // every one of them is idle now
	for _, k := range []string{"a", "b", "c"} {
		_, err := lim.Allow(ctx, k)
		is.NoErr(err)
	}
	lim.SweepOnceForTest(ctx)
	var n int
	is.NoErr(pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n))
	is.Equal(n, live) // only the keys still in their window are left
}
