package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	postgreslimit "github.com/imagegen/imagegen/ratelimit/postgres"
	"github.com/imagegen/imagegen/store/postgres"
)

// openPostgres opens the PostgreSQL store and its limiters, after
// checking that the schema is migrated to this build's version.
func openPostgres(ctx context.Context, c backendConfig, blobs imagegen.BlobStore) (backend, error) {
	listen, err := dialPostgresListen(ctx, c.postgresListen)
	if err != nil {
		return backend{}, err
	}
	pool, err := dialPostgres(ctx, c.postgresURL, listen != nil)
	if err != nil {
		return backend{}, err
	}
	store, err := postgres.New(pool, postgres.Config{Schema: c.schema, Retention: c.retention, Blobs: blobs, ListenConfig: listen})
	if err != nil {
		pool.Close()
		return backend{}, err
	}
	// The limiters' sweepers of idle keys stop before the pool closes.
	var limiters []*postgreslimit.Limiter
	closeAll := func() {
		for _, l := range limiters {
			l.Close()
		}
		store.Close()
		pool.Close()
	}
	fail := func(err error) (backend, error) { closeAll(); return backend{}, err }
	if err := store.CheckSchema(ctx); err != nil {
		if errors.Is(err, postgres.ErrSchemaVersion) {
			return fail(fmt.Errorf("postgres at %s: %w", describePostgres(pool), err))
		}
		return fail(fmt.Errorf("postgres at %s: %w", describePostgres(pool), redactErr(err, c.postgresURL)))
	}
	be := backend{store: store, workReady: store.WorkReady(), close: func() error { closeAll(); return nil }}
	err = be.addLimiters(c.rateLimit, func(limit int, prefix string) (imagegen.Limiter, error) {
		l, err := postgreslimit.New(pool, postgreslimit.Config{Limit: limit, Window: time.Minute, Schema: c.schema, Prefix: prefix})
		if err == nil {
			limiters = append(limiters, l)
		}
		return l, err
	})
	if err != nil {
		return fail(err)
	}
	return be, nil
}

const postgresListenUsage = "with -postgres pointing at a transaction pooler (PgBouncer with pool_mode = transaction): a direct PostgreSQL URL for what a pooler cannot carry, the store's LISTEN (wake-ups of long-polls and idle workers) and, with migrate, the migrations; the pooled connections then use no named prepared statements"

// dialPostgres opens a pool on a postgres:// URL (or key=value DSN) and
// checks that the server answers; pooled says that it goes through a
// transaction pooler, so it keeps no named prepared statements. Errors
// never show the password.
func dialPostgres(ctx context.Context, rawURL string, pooled bool) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("-postgres: not a valid PostgreSQL URL (postgres://user:password@host:port/db?sslmode=disable)%s: %w", schemeHint(rawURL, "postgres"), redactErr(err, rawURL))
	}
	if pooled {
		postgres.PoolerConfig(cfg)
	}
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("-postgres: %w", redactErr(err, rawURL))
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres at %s does not answer: %w", describePostgres(pool), redactErr(err, rawURL))
	}
	return pool, nil
}

// dialPostgresListen parses the direct URL of -postgres-listen ("": nil)
// and checks that a connection to it opens.
func dialPostgresListen(ctx context.Context, rawURL string) (*pgx.ConnConfig, error) {
	if rawURL == "" {
		return nil, nil
	}
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("-postgres-listen: not a valid PostgreSQL URL (postgres://user:password@host:port/db?sslmode=disable)%s: %w", schemeHint(rawURL, "postgres"), redactErr(err, rawURL))
	}
	cfg.ConnectTimeout = 5 * time.Second
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("-postgres-listen: postgres at %s:%d does not answer: %w", cfg.Host, cfg.Port, redactErr(err, rawURL))
	}
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = conn.Close(closeCtx)
	return cfg, nil
}

// describePostgres names a server without its password.
func describePostgres(pool *pgxpool.Pool) string {
	c := pool.Config().ConnConfig
	return fmt.Sprintf("%s:%d database %s user %s", c.Host, c.Port, c.Database, c.User)
}

// redactErr hides the password of rawURL wherever err's text repeats it.
func redactErr(err error, rawURL string) error {
	pw := urlPassword(rawURL)
	if err == nil || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
}

// urlPassword is the password in a postgres:// URL or a key=value DSN.
func urlPassword(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			return pw
		}
	}
	// A URL that url.Parse refuses: scheme://user:password@host…
	if _, rest, ok := strings.Cut(raw, "://"); ok {
		if creds, _, ok := strings.Cut(rest, "@"); ok {
			if _, pw, ok := strings.Cut(creds, ":"); ok {
				return pw
			}
		}
	}
	for _, field := range strings.Fields(raw) {
		if v, ok := strings.CutPrefix(field, "password="); ok {
			return strings.Trim(v, "'")
		}
	}
	return ""
}
