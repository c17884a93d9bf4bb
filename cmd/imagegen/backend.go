package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/store/postgres"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// storeFlags choose where state lives: -redis, -postgres, or neither
// (memory, in this process).
type storeFlags struct {
	redisURL    string
	postgresURL string
	schema      string
}

// register adds -redis, -postgres and -schema; what says what the URLs
// are for.
func (s *storeFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&s.redisURL, "redis", "", "Redis URL (redis://host:port/db) "+what)
	fs.StringVar(&s.postgresURL, "postgres", "", "PostgreSQL URL (postgres://user@host:port/db) "+what+"; apply the schema first with imagegen migrate")
	fs.StringVar(&s.schema, "schema", postgres.DefaultSchema, "PostgreSQL schema of the store's tables (with -postgres)")
}

// check refuses -redis with -postgres, and, when shared is true, neither.
func (s storeFlags) check(shared bool) error {
	switch {
	case s.redisURL != "" && s.postgresURL != "":
		return errors.New("use one of -redis and -postgres, not both")
	case shared && s.redisURL == "" && s.postgresURL == "":
		return errSharedStoreRequired
	}
	return nil
}

func (s storeFlags) name() string {
	switch {
	case s.redisURL != "":
		return "redis"
	case s.postgresURL != "":
		return "postgres"
	}
	return "memory"
}

// errSharedStoreRequired is returned by commands that only make sense
// against a shared store.
var errSharedStoreRequired = errors.New("-redis URL or -postgres URL is required (the memory store lives inside one serve process)")

// backend is where state lives: in this process (memory), in Redis or in
// PostgreSQL, shared by every process pointed at the same URL.
type backend struct {
	store   imagegen.Store
	limiter imagegen.Limiter // per-key request limit
	// signingKey signs image URLs; on a shared store every API process
	// must use the same one.
	signingKey []byte
	// workReady wakes idle workers when another process queues work
	// (PostgreSQL's NOTIFY); nil for the other stores.
	workReady <-chan struct{}
	close     func() error
}

type backendConfig struct {
	storeFlags
	retention  time.Duration
	rateLimit  int
	signingKey string
}

func openBackend(ctx context.Context, c backendConfig) (backend, error) {
	if err := c.check(false); err != nil {
		return backend{}, err
	}
	clock := imagegen.SystemClock{}
	switch {
	case c.redisURL != "":
		return openRedis(ctx, c)
	case c.postgresURL != "":
		return openPostgres(ctx, c)
	}
	limiter, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: c.rateLimit, Window: time.Minute, Clock: clock})
	if err != nil {
		return backend{}, err
	}
	return backend{
		store:      memory.New(memory.Config{Clock: clock, Retention: c.retention}),
		limiter:    limiter,
		signingKey: []byte(c.signingKey), // empty: httpapi makes a random one
		close:      func() error { return nil },
	}, nil
}

func openRedis(ctx context.Context, c backendConfig) (backend, error) {
	rdb, err := dialRedis(ctx, c.redisURL)
	if err != nil {
		return backend{}, err
	}
	fail := func(err error) (backend, error) { _ = rdb.Close(); return backend{}, err }
	store, err := redisstore.New(rdb, redisstore.Config{Retention: c.retention})
	if err != nil {
		return fail(err)
	}
	limiter, err := ratelimit.NewRedis(rdb, ratelimit.RedisConfig{Limit: c.rateLimit, Window: time.Minute})
	if err != nil {
		return fail(err)
	}
	key, err := sharedSigningKey(ctx, store, c.signingKey)
	if err != nil {
		return fail(err)
	}
	return backend{store: store, limiter: limiter, signingKey: key, close: rdb.Close}, nil
}

// sharedSigningKey is -signing-key, or else the key every API process
// on a shared store signs with: the first one to start makes it.
func sharedSigningKey(ctx context.Context, store imagegen.SecretStore, flagKey string) ([]byte, error) {
	if flagKey != "" {
		return []byte(flagKey), nil
	}
	return store.SharedSecret(ctx, "url-signing", randomKey)
}

// dialRedis connects to a redis:// or rediss:// URL and checks it answers.
func dialRedis(ctx context.Context, url string) (*goredis.Client, error) {
	opt, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	rdb := goredis.NewClient(opt)
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pingCtx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis at %s does not answer: %w", redactURL(opt), err)
	}
	return rdb, nil
}

// redactURL names a Redis server without its password.
func redactURL(opt *goredis.Options) string {
	return fmt.Sprintf("%s db %d", opt.Addr, opt.DB)
}

func randomKey() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Go 1.24+
	return b
}
