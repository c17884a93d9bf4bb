package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob"
	"github.com/imagegen/imagegen/console"
	"github.com/imagegen/imagegen/internal/redisurl"
	"github.com/imagegen/imagegen/ratelimit"
	redislimit "github.com/imagegen/imagegen/ratelimit/redis"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/store/postgres"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// storeFlags choose where state lives: -redis, -postgres, or neither
// (memory, in this process).
type storeFlags struct {
	redisURL    string
	postgresURL string
	// postgresListen is a direct connection for LISTEN when postgresURL
	// goes through a transaction pooler.
	postgresListen string
	schema         string
	// redisWaitReplicas: acknowledge submits, finishes and ledger entries
	// only once this many replicas have them.
	redisWaitReplicas int
}

// register adds -redis, -postgres and -schema (the URLs may hold
// passwords: they also read from files); what says what they are for.
func (s *storeFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&s.redisURL, "redis", "", "Redis URL: "+redisurl.Usage+"; "+what)
	fs.StringVar(&s.postgresURL, "postgres", "", "PostgreSQL URL (postgres://user@host:port/db) "+what+"; create its schema first with imagegen migrate")
	fs.IntVar(&s.redisWaitReplicas, "redis-wait-replicas", 0, "with -redis: answer a submit, a finish, a credit change and a key's creation or revocation only once this many replicas of the master have it (WAIT, at most 1s; when fewer confirm, the request gets a 500 and the change may or may not survive a failover); 0 answers once the master has it")
	fs.StringVar(&s.postgresListen, "postgres-listen", "", postgresListenUsage)
	fs.StringVar(&s.schema, "schema", postgres.DefaultSchema, "PostgreSQL schema of the store's tables (with -postgres)")
	secretFiles(fs, "redis", "postgres", "postgres-listen")
}

// check refuses -redis with -postgres, and, when shared is true, neither.
func (s storeFlags) check(shared bool) error {
	switch {
	case s.redisURL != "" && s.postgresURL != "":
		return errors.New("use one of -redis and -postgres, not both")
	case shared && s.redisURL == "" && s.postgresURL == "":
		return errSharedStoreRequired
	case s.redisWaitReplicas < 0:
		return errors.New("-redis-wait-replicas must not be negative")
	case s.redisWaitReplicas > 0 && s.redisURL == "":
		return errors.New("-redis-wait-replicas needs -redis")
	case s.postgresListen != "" && s.postgresURL == "":
		return errors.New("-postgres-listen needs -postgres (the pooler's URL)")
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
	// authFailures counts failed authentications per client address;
	// on a shared store every process shares the counts.
	authFailures imagegen.Limiter
	// consoleReads is the console's read budget per session, shared
	// like authFailures.
	consoleReads imagegen.Limiter
	// workReady wakes idle workers when another process queues work
	// (PostgreSQL's NOTIFY); nil for the other stores.
	workReady <-chan struct{}
	close     func() error
}

// Failed authentications allowed per client address (IPv4 address or
// IPv6 /64) per rolling minute before they get 429 instead of 401; on a
// shared store they are counted under their own key prefix.
const (
	authFailureLimit  = 10
	authFailurePrefix = "imagegen:authfail:"
)

// consoleReadsPrefix is where a shared store counts the console's page
// reads per user (console.DefaultSessionReads a minute).
const consoleReadsPrefix = "imagegen:console-reads:"

type backendConfig struct {
	storeFlags
	blobsURL  string // "" for the store's own default
	retention time.Duration
	rateLimit int
}

func openBackend(ctx context.Context, c backendConfig) (backend, error) {
	if err := c.check(false); err != nil {
		return backend{}, err
	}
	clock := imagegen.SystemClock{}
	var blobs imagegen.BlobStore // nil: the store's default
	if c.blobsURL != "" {
		var err error
		if blobs, err = blob.Open(ctx, c.blobsURL); err != nil {
			return backend{}, fmt.Errorf("-blobs: %w", err)
		}
	}
	switch {
	case c.redisURL != "":
		return openRedis(ctx, c, blobs)
	case c.postgresURL != "":
		return openPostgres(ctx, c, blobs)
	default:
		store, err := memory.New(memory.Config{Clock: clock, Retention: c.retention, Blobs: blobs})
		if err != nil {
			return backend{}, err
		}
		be := backend{store: store, close: func() error { return nil }}
		err = be.addLimiters(c.rateLimit, func(limit int, _ string) (imagegen.Limiter, error) {
			return ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: limit, Window: time.Minute, Clock: clock})
		})
		return be, err
	}
}

// addLimiters gives b its limiters, each made by newLimiter (limit
// requests in any rolling minute, its keys under prefix; "" for the
// limiter's default): per API key, failed authentications per client
// address, and the console's page reads per user.
func (b *backend) addLimiters(rateLimit int, newLimiter func(limit int, prefix string) (imagegen.Limiter, error)) (err error) {
	if b.limiter, err = newLimiter(rateLimit, ""); err != nil {
		return err
	}
	if b.authFailures, err = newLimiter(authFailureLimit, authFailurePrefix); err != nil {
		return err
	}
	b.consoleReads, err = newLimiter(console.DefaultSessionReads, consoleReadsPrefix)
	return err
}

func openRedis(ctx context.Context, c backendConfig, blobs imagegen.BlobStore) (backend, error) {
	rdb, err := dialRedis(ctx, "redis", c.redisURL)
	if err != nil {
		return backend{}, err
	}
	fail := func(err error) (backend, error) { _ = rdb.Close(); return backend{}, err }
	store, err := redisstore.New(rdb, redisstore.Config{Retention: c.retention, Blobs: blobs, WaitReplicas: c.redisWaitReplicas})
	if err != nil {
		return fail(err)
	}
	// A process whose number of shards differs from the store's would
	// read and write owners in the wrong shards: refuse to start.
	checkCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = store.CheckLayout(checkCtx)
	cancel()
	if err != nil {
		return fail(fmt.Errorf("-redis: %w", err))
	}
	be := backend{store: store, close: rdb.Close}
	err = be.addLimiters(c.rateLimit, func(limit int, prefix string) (imagegen.Limiter, error) {
		return redislimit.New(rdb, redislimit.Config{Limit: limit, Window: time.Minute, Prefix: prefix})
	})
	if err != nil {
		return fail(err)
	}
	return be, nil
}

// dialRedis connects to the Redis URL of -flag, of any kind (one node,
// Cluster or Sentinel: see redisurl), and checks that it answers. Errors
// name the flag and never show the password.
func dialRedis(ctx context.Context, flag, url string) (goredis.UniversalClient, error) {
	rdb, opt, err := redisurl.Open(url)
	if err != nil {
		return nil, fmt.Errorf("-%s: %w%s", flag, err, schemeHint(url, "redis"))
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pingCtx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("-%s: redis at %s does not answer: %w", flag, opt, err)
	}
	return rdb, nil
}
