package redis

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/groupcommit"
	"github.com/imagegen/imagegen/internal/redisglob"
	"github.com/imagegen/imagegen/ratelimit/internal/rolling"
)

var _ imagegen.Limiter = (*Limiter)(nil)

// DefaultPrefix is Config.Prefix when it is left empty.
const DefaultPrefix = "imagegen:rl:"

// Config configures a Redis limiter. Every field has a default.
type Config struct {
	// Limit is how many requests a key may make in any rolling Window
	// (default 10).
	Limit int
	// Window is the length of the rolling window (default 1m). It must be
	// at least a millisecond and a whole number of microseconds.
	Window time.Duration
	// Prefix starts the name of every Redis key of the limiter (default
	// DefaultPrefix). Limiters with the same prefix on one Redis
	// share their counts; give each policy its own prefix, and not one
	// that begins with another's: a key is the prefix and the limited
	// key run together ("{<prefix><key>}"), so limiter "p" counting key
	// "x:a" and limiter "p:x" counting key ":a" would share a count, and
	// each's KeyPattern matches the other's keys.
	Prefix string
	// Now, when set, replaces the Redis server's clock, for tests only:
	// its time is passed to the script instead of read there with TIME.
	// Key TTLs still run on the server's clock, so with Now set a key is
	// kept for at least a minute (or Window if longer) after its last
	// request, so that a test clock slower than the server's does not
	// lose requests still in its window.
	Now func() time.Time
	// OneKeyPerScript makes each Allow a script run of its own, as on a
	// Cluster, for a client of one address in front of several servers
	// that places keys by their hash slot (a proxy such as twemproxy or
	// Envoy, a clustered database without the Cluster API), where a
	// script may touch the keys of one server only. Left false, the
	// Allow calls a process makes together share one script run on a
	// client of one server (a *goredis.Client, which a Sentinel's client
	// is too); a proxy that refuses a run's keys with CROSSSLOT turns
	// that off by itself, but one that routes a run by its first key
	// alone would count each key's requests on whichever server the run
	// went to. A Cluster client always runs them apart.
	OneKeyPerScript bool
}

func (c Config) withDefaults() Config {
	c.Limit = cmp.Or(c.Limit, rolling.DefaultLimit)
	c.Window = cmp.Or(c.Window, rolling.DefaultWindow)
	c.Prefix = cmp.Or(c.Prefix, DefaultPrefix)
	return c
}

func (c Config) validate() error {
	if err := rolling.Check("ratelimit/redis", "Config", c.Limit, c.Window); err != nil {
		return err
	}
	switch {
	case c.Window != 0 && c.Window < time.Millisecond:
		return fmt.Errorf("ratelimit/redis: Config.Window must be at least 1ms (got %v)", c.Window)
	case c.Window%time.Microsecond != 0:
		return fmt.Errorf("ratelimit/redis: Config.Window must be a whole number of microseconds (got %v)", c.Window)
	}
	return nil
}

// Limiter is a limiter whose state lives in Redis, so that every process
// on one Redis shares it: each key may make at most Limit requests in any
// rolling Window, counted across all processes, with the same answers as
// [github.com/imagegen/imagegen/ratelimit.Memory] (see its Allow).
//
// With a Limit up to MaxLogLimit (the default is 10), each key is one
// string named "{" + Prefix + key + "}:log" (a hash tag, for Redis
// Cluster): the times of its accepted requests that may still be in the
// window, oldest first, 16 digits each. A Lua script reads it (GET),
// finds the requests still in the window by a binary search and, when
// the request is accepted, writes the log back without those that left
// it and with the request's time (SET, with the key's TTL); a refusal
// writes nothing. A larger Limit would make that string long, so its
// keys are sorted sets of the request times instead, named
// "{" + Prefix + key + "}", which an Allow expires, counts and adds to in
// six commands. Either way concurrent requests from any number of
// processes never exceed the limit. Limiters of one Prefix on either side
// of MaxLogLimit count apart, and so do a process of an older version
// (sorted sets for every Limit) and one of this version during an
// upgrade, for one Window: neither reads the other's keys.
// Allow calls made together in one process share one script run (group
// commit: calls that arrive while a run is in flight make up the next,
// and the callers a run answered get to queue again before the next one
// goes), which takes them in turn, each as if it ran alone, so they
// share one round trip and the run's setup (the script call, TIME);
// a lone call goes at once. On a Cluster, whose keys are in different
// slots, the calls of a batch are a script run each, in one pipeline.
// A key whose value is not the limiter's (a key of another type under
// the limiter's names, or a string that is not a log) fails its own
// calls only. Behind a proxy that spreads keys over servers, see
// Config.OneKeyPerScript.
// Time is read inside Redis (TIME, to the microsecond), so processes with
// skewed clocks agree. Every key expires a Window after its last accepted
// request, so memory is bounded by the keys active in one Window. Redis 5
// or later is required (a script that reads TIME and then writes).
//
// It is safe for concurrent use.
type Limiter struct {
	rdb    goredis.UniversalClient
	allow  *goredis.Script
	limit  int
	window time.Duration
	prefix string
	suffix string           // of the key names: ":log" for logs
	now    func() time.Time // nil: the server's clock
	// The script's constant arguments, formatted once.
	windowArg, limitArg, ttlArg string
	// calls gathers concurrent Allow calls into batches.
	calls groupcommit.Batcher[allowCall, []int64]
	// together is whether the calls of a batch share one script run:
	// for a client of one server (or of a Sentinel's master), unless
	// Config.OneKeyPerScript says otherwise or the server refused a run
	// with CROSSSLOT; never for a Cluster's, whose keys are spread over
	// slots.
	together atomic.Bool
}

// allowCall is one Allow's script run: its Redis key and time argument.
type allowCall struct{ key, now string }

// Batching bounds: calls per batch, batches in flight. The batcher
// gathers (groupcommit's Gather): 32 goroutines calling Allow on 30 keys
// at a limit of 10^8 (the sorted sets), six alternating runs of 30,000
// calls, cost Redis 17.0 µs of CPU a call against 20.9 without it
// (medians), and took 25.8 µs a call against 44.2, when each call of a
// batch was a script run of its own in one pipeline. A batch as one
// script run (bench module's BenchmarkRedisLimiter, three alternating
// runs of 30,000 calls on a 2-core AMD EPYC shared with other work):
// 7.7 µs of Redis CPU a call against 10.3 on the logs of serve's
// default limit, 9.0 against 12.7 on the sorted sets; under callgrind
// 56k server instructions a call against 80k, and 72k against 97k.
// A batch of fewer than minBehind calls waits while another is in
// flight (groupcommit's MinBehind, at most its DefaultHoldMax): see
// store/redis's minBehind, whose figures include this limiter's.
const (
	maxBatch    = 64
	maxInFlight = 4
	minBehind   = maxBatch / 4
)

// New returns a Redis limiter on rdb (a standalone, Sentinel or
// Cluster client) configured by cfg, with defaults for its zero fields.
func New(rdb goredis.UniversalClient, cfg Config) (*Limiter, error) {
	if rdb == nil {
		return nil, errors.New("ratelimit/redis.New: client is required")
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("ratelimit/redis.New: %w", err)
	}
	cfg = cfg.withDefaults()
	ttl := cfg.Window
	if cfg.Now != nil {
		ttl = max(ttl, time.Minute)
	}
	r := &Limiter{
		rdb:       rdb,
		limit:     cfg.Limit,
		window:    cfg.Window,
		prefix:    cfg.Prefix,
		now:       cfg.Now,
		windowArg: strconv.FormatInt(cfg.Window.Microseconds(), 10),
		limitArg:  strconv.Itoa(cfg.Limit),
		ttlArg:    strconv.FormatInt(ceilMillis(ttl), 10),
	}
	r.allow, r.suffix = goredis.NewScript(allowArgs+allowLog+allowRun), ":log"
	if cfg.Limit > MaxLogLimit {
		r.allow, r.suffix = goredis.NewScript(allowArgs+allowSet+allowRun), ""
	}
	_, oneServer := rdb.(*goredis.Client)
	r.together.Store(oneServer && !cfg.OneKeyPerScript)
	r.calls = groupcommit.Batcher[allowCall, []int64]{Run: r.runCalls, MaxBatch: maxBatch, MaxInFlight: maxInFlight, Gather: true,
		MinBehind: minBehind}
	return r, nil
}

// The scripts record requests, each for its key if the key has room, in
// order. Each returns, per request, {allowed, count, free, now}: whether
// the request was accepted, how many requests are in its key's window
// after it, when one more will be allowed (µs; 0 while count < limit) and
// the time it used (µs); or, in place of allowed, the message of the
// error that its key alone met (a key of another type).
//
//	KEYS      the requests' keys: their logs (allowLog) or sorted sets (allowSet)
//	ARGV[1]   window (µs)
//	ARGV[2]   limit
//	ARGV[3]   a key's time to live (ms)
//	ARGV[3+i] request i's time (µs), or "" to read the server's clock with TIME
//
// Each is allow_args.lua (the arguments and the time), its own part
// (allow_log.lua or allow_set.lua: one request), and allow_run.lua (the
// requests in turn).
var (
	//go:embed allow_args.lua
	allowArgs string
	//go:embed allow_log.lua
	allowLog string
	//go:embed allow_set.lua
	allowSet string
	//go:embed allow_run.lua
	allowRun string
)

// MaxLogLimit is the largest Limit whose keys are logs of times in one
// string; a larger one keeps a sorted set per key (see Limiter). An
// Allow on a log copies it, so the log costs more as it grows: under
// callgrind, an accepted Allow on a key filling up to its limit cost the
// server 89k instructions on a log against 111k on a sorted set at a
// limit of 10, 113k against 120k at 64, and 135k against 130k at 128,
// each Allow a script run of its own (a batch's run now shares its
// setup, which both kinds paid alike).
const MaxLogLimit = 64

// Allow records one request for key if key made fewer than Limit requests
// in the last Window, counting the requests of every process on this
// Redis, and reports the outcome with the same fields as
// [github.com/imagegen/imagegen/ratelimit.Memory.Allow]. A refused
// request is not recorded. Allow fails only when Redis does (or ctx
// ends); the error wraps Redis's.
func (r *Limiter) Allow(ctx context.Context, key string) (imagegen.LimitResult, error) {
	now := ""
	if r.now != nil {
		now = strconv.FormatInt(r.now().UnixMicro(), 10)
	}
	v, err := r.calls.Do(ctx, allowCall{key: r.redisKey(key), now: now})
	if err != nil {
		return imagegen.LimitResult{}, fmt.Errorf("ratelimit/redis: allow: %w", err)
	}
	if len(v) != 4 {
		return imagegen.LimitResult{}, fmt.Errorf("ratelimit/redis: allow: script returned %d values, want 4", len(v))
	}
	allowed, count, free, at := v[0] == 1, int(v[1]), v[2], v[3]
	return rolling.Stored(allowed, r.limit, r.window, count, free, at), nil
}

// runCalls runs a batch of Allow calls. On one server they make one
// script run, which takes them in turn, each as if it ran on its own:
// the run's setup (the call, TIME, its arguments) is paid once for the
// batch. On a Cluster, whose keys are in different slots, each call is a
// script run of its own, all in one pipeline.
func (r *Limiter) runCalls(ctx context.Context, batch []*groupcommit.Call[allowCall, []int64]) {
	if r.together.Load() || len(batch) == 1 {
		keys := make([]string, len(batch))
		args := r.args(len(batch))
		for i, c := range batch {
			keys[i] = c.Req.key
			args = append(args, c.Req.now)
		}
		res, err := r.allow.Run(ctx, r.rdb, keys, args...).Slice() // Run loads the script when Redis lacks it
		if len(batch) > 1 && goredis.HasErrorPrefix(err, "CROSSSLOT") {
			// Keys on several servers behind one address: refused
			// before the script ran, so nothing was counted. From now
			// on, a run a call.
			r.together.Store(false)
		} else {
			for i, c := range batch {
				c.Res, c.Err = answer(res, err, i)
			}
			return
		}
	}
	cmds := make([]*goredis.Cmd, len(batch))
	_, _ = r.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, c := range batch {
			cmds[i] = r.allow.EvalSha(ctx, p, []string{c.Req.key}, append(r.args(1), c.Req.now)...)
		}
		return nil
	}) // each command carries its own error
	for i, c := range batch {
		res, err := cmds[i].Slice()
		if goredis.HasErrorPrefix(err, "NOSCRIPT") {
			res, err = r.allow.Run(ctx, r.rdb, []string{c.Req.key}, append(r.args(1), c.Req.now)...).Slice()
		}
		c.Res, c.Err = answer(res, err, 0)
	}
}

// args are the scripts' constant arguments, with room for n times.
func (r *Limiter) args(n int) []any {
	return append(make([]any, 0, 3+n), r.windowArg, r.limitArg, r.ttlArg)
}

// answer is request i's four values of a script's reply res (or err).
func answer(res []any, err error, i int) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	if len(res) < 4*(i+1) {
		return nil, fmt.Errorf("script returned %d values for request %d", len(res), i+1)
	}
	v := make([]int64, 4)
	for j, x := range res[4*i : 4*i+4] {
		switch x := x.(type) {
		case int64:
			v[j] = x
		case string:
			return nil, keyError(x) // the key's own error (only allowed's place holds one)
		default:
			return nil, fmt.Errorf("script returned %T for request %d", x, i+1)
		}
	}
	return v, nil
}

// keyError is the error one call of a batch met on its key, as the
// script gave it: a goredis.Error (RedisError), as it would have been
// had the call run alone, so that goredis.HasErrorPrefix reads it.
type keyError string

func (e keyError) Error() string { return string(e) }

// RedisError marks keyError as an error of the server's.
func (e keyError) RedisError() {}

// KeyPattern is a SCAN/KEYS pattern that matches every key of the
// limiter (and of any limiter with the same Prefix, or one that begins
// with it: see Config.Prefix), for operators' tools and tests that clean
// up after themselves.
func (r *Limiter) KeyPattern() string { return "{" + redisglob.Escape(r.prefix) + "*" }

// redisKey names key's log, in a hash tag for Cluster. A key holding "}"
// only shortens the tag, which is harmless: a script run touches one
// key, or keys of one server.
func (r *Limiter) redisKey(key string) string { return "{" + r.prefix + key + "}" + r.suffix }

// ceilMillis rounds d up to whole milliseconds.
func ceilMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
