package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/store/memory"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// backend is where state lives: in this process (memory) or in Redis,
// shared by every process pointed at the same URL.
type backend struct {
	store   imagegen.Store
	limiter imagegen.Limiter // per-key request limit
	// authFailures counts failed authentications per client address;
	// on Redis every process shares the counts.
	authFailures imagegen.Limiter
	close        func() error
}

// Failed authentications allowed per client address (IPv4 address or
// IPv6 /64) per rolling minute before they get 429 instead of 401; on
// Redis they are counted under their own key prefix.
const (
	authFailureLimit  = 10
	authFailurePrefix = "imagegen:authfail:"
)

type backendConfig struct {
	redisURL  string // "" for the memory store
	blobsURL  string // "" for the store's own default
	retention time.Duration
	rateLimit int
}

func openBackend(ctx context.Context, c backendConfig) (backend, error) {
	clock := imagegen.SystemClock{}
	var blobs imagegen.BlobStore // nil: the store's default
	if c.blobsURL != "" {
		var err error
		if blobs, err = blob.Open(ctx, c.blobsURL); err != nil {
			return backend{}, fmt.Errorf("-blobs: %w", err)
		}
	}
	if c.redisURL == "" {
		limiter, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: c.rateLimit, Window: time.Minute, Clock: clock})
		if err != nil {
			return backend{}, err
		}
		authFailures, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: authFailureLimit, Window: time.Minute, Clock: clock})
		if err != nil {
			return backend{}, err
		}
		return backend{
			store:        memory.New(memory.Config{Clock: clock, Retention: c.retention, Blobs: blobs}),
			limiter:      limiter,
			authFailures: authFailures,
			close:        func() error { return nil },
		}, nil
	}

	rdb, err := dialRedis(ctx, c.redisURL)
	if err != nil {
		return backend{}, err
	}
	fail := func(err error) (backend, error) { _ = rdb.Close(); return backend{}, err }
	store, err := redisstore.New(rdb, redisstore.Config{Retention: c.retention, Blobs: blobs})
	if err != nil {
		return fail(err)
	}
	limiter, err := ratelimit.NewRedis(rdb, ratelimit.RedisConfig{Limit: c.rateLimit, Window: time.Minute})
	if err != nil {
		return fail(err)
	}
	authFailures, err := ratelimit.NewRedis(rdb, ratelimit.RedisConfig{Limit: authFailureLimit, Window: time.Minute, Prefix: authFailurePrefix})
	if err != nil {
		return fail(err)
	}
	return backend{store: store, limiter: limiter, authFailures: authFailures, close: rdb.Close}, nil
}

// dialRedis connects to a redis:// or rediss:// URL and checks it answers.
func dialRedis(ctx context.Context, url string) (*goredis.Client, error) {
	opt, err := goredis.ParseURL(url)
	if err != nil {
		// The URL may hold a password: it is not repeated.
		return nil, errors.New("-redis must be a URL like redis://[:password@]host:port/db (or rediss:// for TLS)")
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

// errRedisRequired is returned by commands that only make sense against
// a shared store.
var errRedisRequired = errors.New("-redis URL is required (the memory store lives inside one serve process)")
