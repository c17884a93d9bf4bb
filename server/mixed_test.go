package server_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	redislimit "github.com/imagegen/imagegen/ratelimit/redis"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/postgres"
)

// Backends mix: two processes on one PostgreSQL store share their
// per-key limit through Redis (ratelimit/redis), and their balances
// through PostgreSQL.
func TestPostgresStoreWithRedisLimits(t *testing.T) {
	is := is.New(t)
	pool := pgtest.Connect(t)
	schema := pgtest.MigratedSchema(t, pool)
	rdb := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	process := func() *server.Server {
		store, err := postgres.New(pool, postgres.Config{Schema: schema})
		is.NoErr(err)
		t.Cleanup(store.Close)
		limiter, err := redislimit.New(rdb, redislimit.Config{})
		is.NoErr(err)
		c := config(store)
		c.Limiter, c.NoWorkers = limiter, true
		c.Service.Logger = slog.New(slog.DiscardHandler)
		srv, err := server.New(ctx, c)
		is.NoErr(err)
		return srv
	}
	a, b := process(), process()
	key, _, err := a.Service().CreateKey(ctx, "alice")
	is.NoErr(err)
	_, err = a.Service().Grant(ctx, "alice", 3, "order-1")
	is.NoErr(err)

	w := do(t, a, "POST", "/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a lighthouse"}`)
	is.Equal(w.Code, http.StatusCreated)
	w = do(t, b, "GET", "/api/v1/credits", key, "")
	is.Equal(w.Code, http.StatusOK)
	is.Equal(strings.TrimSpace(w.Body.String()), `{"credits_remaining":2}`) // the charge made through a, read through b
	for i := range 8 {                                                      // 10 requests in all, alternating processes
		is.Equal(do(t, []*server.Server{a, b}[i%2], "GET", "/api/v1/credits", key, "").Code, http.StatusOK)
	}
	is.Equal(do(t, b, "GET", "/api/v1/credits", key, "").Code, http.StatusTooManyRequests) // the 11th, shared
}
