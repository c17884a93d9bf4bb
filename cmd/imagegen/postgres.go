package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/urlredact"
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
			return fail(fmt.Errorf("postgres at %s: %w", describePostgres(pool.Config().ConnConfig, c.postgresURL), err))
		}
		return fail(fmt.Errorf("postgres at %s: %w", describePostgres(pool.Config().ConnConfig, c.postgresURL), redactErr(err, c.postgresURL)))
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
		return nil, fmt.Errorf("postgres at %s does not answer: %w", describePostgres(pool.Config().ConnConfig, rawURL), redactErr(err, rawURL))
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
		return nil, fmt.Errorf("-postgres-listen: postgres at %s does not answer: %w", urlredact.Text(fmt.Sprintf("%s:%d", cfg.Host, cfg.Port), rawURL, urlredact.Password), redactErr(err, rawURL))
	}
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = conn.Close(closeCtx)
	return cfg, nil
}

// describePostgres names the server of c, parsed from raw, without its
// password: a password with an unencoded '@' reads to pgx as the end of
// the user's part, the rest of it as the host's.
func describePostgres(c *pgx.ConnConfig, raw string) string {
	return urlredact.Text(fmt.Sprintf("%s:%d database %s user %s", c.Host, c.Port, c.Database, c.User), raw, urlredact.Password)
}

// redactErr hides the password of rawURL wherever err's text repeats
// it, in any part or form (package urlredact). pgx's parse errors repeat
// the connection string, masked by pgx at best effort (a password with
// an '@' in it comes out half shown): that copy is left out, the reason
// kept.
func redactErr(err error, rawURL string) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		bare := *pe
		bare.ConnString = ""
		reason := strings.TrimPrefix(bare.Error(), "cannot parse ``: ")
		err = errors.New(strings.Replace(err.Error(), pe.Error(), reason, 1))
	}
	return urlredact.Error(err, rawURL, urlredact.Password)
}
