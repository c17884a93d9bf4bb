package postgres

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/groupcommit"
	"github.com/imagegen/imagegen/internal/pgreset"
	"github.com/imagegen/imagegen/internal/pgtext"
	"github.com/imagegen/imagegen/ratelimit/internal/rolling"
)

var _ imagegen.Limiter = (*Limiter)(nil)

// DefaultPrefix is Config.Prefix when it is left empty.
const DefaultPrefix = "rl:"

// Config configures a PostgreSQL limiter. Every field has a
// default.
type Config struct {
	// Limit is how many requests a key may make in any rolling Window
	// (default 10), at most math.MaxInt32 (PostgreSQL's integer).
	Limit int
	// Window is the length of the rolling window (default 1m), a whole
	// number of microseconds.
	Window time.Duration
	// Schema holds the limiter's table, rate_limits, made by the store's
	// migrations (postgres.Migrate, or `imagegen migrate`); default
	// "imagegen", the store's default.
	Schema string
	// Prefix starts every key the limiter stores (default DefaultPrefix),
	// at most MaxPrefix bytes of UTF-8 without NUL. Limiters with the
	// same prefix on one schema share their counts; give each policy its
	// own prefix.
	Prefix string
	// SweepInterval is how often the limiter deletes, in the background,
	// the rows of keys idle for their window (default Window).
	SweepInterval time.Duration
	// Now, when set, replaces the database server's clock (tests only):
	// its time is passed to the database instead of read there.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	c.Limit = cmp.Or(c.Limit, rolling.DefaultLimit)
	c.Window = cmp.Or(c.Window, rolling.DefaultWindow)
	c.Schema = cmp.Or(c.Schema, "imagegen")
	c.Prefix = cmp.Or(c.Prefix, DefaultPrefix)
	c.SweepInterval = cmp.Or(c.SweepInterval, c.Window)
	return c
}

func (c Config) validate() error {
	if err := rolling.Check("ratelimit/postgres", "Config", c.Limit, c.Window); err != nil {
		return err
	}
	if c.Limit > math.MaxInt32 {
		return fmt.Errorf("ratelimit/postgres: Config.Limit must be at most %d (got %d)", math.MaxInt32, c.Limit)
	}
	if c.Window%time.Microsecond != 0 {
		return fmt.Errorf("ratelimit/postgres: Config.Window must be a whole number of microseconds (got %v)", c.Window)
	}
	if c.SweepInterval < 0 {
		return fmt.Errorf("ratelimit/postgres: Config.SweepInterval must not be negative (got %v)", c.SweepInterval)
	}
	if len(c.Prefix) > MaxPrefix || !pgtext.Storable(c.Prefix) {
		return fmt.Errorf("ratelimit/postgres: Config.Prefix must be at most %d bytes of valid UTF-8 without the NUL character (got %q)", MaxPrefix, c.Prefix)
	}
	return nil
}

// MaxPrefix is the longest Config.Prefix, in bytes.
const MaxPrefix = 256

// maxPlainKey is the longest key, in bytes, that the table keeps as it
// is (after the prefix). The key is the table's primary key, and an
// entry of its index holds at most about 2.7 kB.
const maxPlainKey = 512

// digestMark starts the stored form of a key kept as its digest.
const digestMark = "sha256:"

// storedKey is the key of the row that counts key's requests: the
// prefix and key as they are, or, for a key the table cannot keep as it
// is, the prefix and the key's SHA-256 after digestMark. A key that
// PostgreSQL's text refuses (NUL, invalid UTF-8), that is longer than
// maxPlainKey, or that starts with digestMark itself (so that no plain
// key can pass for another's digest) is kept as its digest: every string
// is a key, as for the other limiters, and a host's Authenticator that
// lets such a key through costs its caller a limit, not a 500.
func (p *Limiter) storedKey(key string) string {
	if len(key) <= maxPlainKey && pgtext.Storable(key) && !strings.HasPrefix(key, digestMark) {
		return p.prefix + key
	}
	sum := sha256.Sum256([]byte(key))
	return p.prefix + digestMark + hex.EncodeToString(sum[:])
}

// Limiter is a limiter whose state lives in PostgreSQL, so that every
// process on one database shares it, with the same answers as
// [github.com/imagegen/imagegen/ratelimit.Memory] and the Redis limiter:
// each key may make at most Limit requests in any rolling Window, counted
// across all processes.
//
// Each key is one row of <schema>.rate_limits holding the times of its
// last accepted requests in a ring of at most Limit slots, about as many
// as the key makes in one Window. Each check reads the row; a request is
// allowed when fewer than Limit of the times are in the window, and then
// takes the slot of the oldest time if that one has left the window
// (else the ring grows by one), with a compare-and-set update of the row
// (read again if another call changed it first), so concurrent requests
// from any number of processes never exceed the limit. Concurrent Allow
// calls of one Limiter share a round trip and a transaction (group
// commit): the calls that arrive while a batch runs go together in the
// next, one call of the rate_allow_many function that checks each in
// turn, in the order of their keys, so that two batches (of two
// processes) that want the same rows take them in the same order and
// never wait for each other in a cycle. A lone call goes at once, alone.
// A call waits for its batch to end, whatever its ctx does once the
// batch is sent; a batch that fails fails all its calls. A refusal
// writes nothing; an acceptance changes one slot in place (an update
// that stays on its page, whose write-ahead log record holds about the
// bytes that changed) and commits without waiting for the log to be
// flushed: a crash of the database server may forget the last fraction
// of a second of accepted requests (their count, not the requests).
// Time is read inside PostgreSQL, to the microsecond, as each check is
// made, so processes with skewed clocks agree. Rows of keys idle for
// their Window are deleted by a goroutine of the limiter, once every
// SweepInterval (by default a Window), in batches of 500 a statement
// until none is left (for at most 10 s a round), never on the way of an
// Allow; the table holds about the keys active in one Window.
// Close stops that goroutine.
//
// The table comes with the store's migrations (version 6), and the
// function with version 18: run postgres.Migrate on Schema first (on a
// schema of an earlier version every check fails). It is safe for
// concurrent use.
//
// Behind a transaction pooler (PgBouncer with pool_mode = transaction),
// give it the store's pooled pool, made with store/postgres.PoolerConfig
// (no named prepared statements): a batch of checks is one statement and
// keeps no session state, so any server session may run it.
type Limiter struct {
	pool   *pgxpool.Pool
	resets *pgreset.Pool // empties pool when a check finds its connection broken
	limit  int
	window time.Duration
	prefix string
	now    func() time.Time
	allow  string // SQL: a batch of checks, in turn
	sweep  string // SQL

	calls groupcommit.Batcher[allowCall, allowResult] // gathers concurrent checks into batches

	stop    context.CancelFunc // ends the sweeper
	stopped chan struct{}      // closed when the sweeper has returned
}

// sweepTimeout bounds one round of the idle-key sweep; sweepBatch is
// how many rows one statement of it deletes, so that each holds its row
// locks briefly. A round deletes batches until one finds fewer idle rows
// than that: one batch a round would fall behind as soon as more than
// sweepBatch keys a SweepInterval went idle (a client rotating addresses
// through the failed-authentication limit), and the table would grow
// without bound.
const (
	sweepTimeout = 10 * time.Second
	sweepBatch   = 500
)

// New returns a PostgreSQL limiter on pool configured by cfg, with
// defaults for its zero fields, and starts its sweeper of idle keys,
// which first touches the database a SweepInterval later. Call Close,
// before closing pool, to stop it.
func New(pool *pgxpool.Pool, cfg Config) (*Limiter, error) {
	if pool == nil {
		return nil, errors.New("ratelimit/postgres.New: pool is required")
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("ratelimit/postgres.New: %w", err)
	}
	cfg = cfg.withDefaults()
	schema := pgx.Identifier{cfg.Schema}.Sanitize()
	p := &Limiter{
		pool:   pool,
		resets: pgreset.New(pool),
		limit:  cfg.Limit,
		window: cfg.Window,
		prefix: cfg.Prefix,
		now:    cfg.Now,
		// Each check in turn, in the arrays' order, each seeing the rows
		// the checks before it changed; a row a check, in that order.
		allow: `SELECT allowed, count, free, at FROM ` + schema + `.rate_allow_many($1::text[], $2::bigint[], $3, $4)`,
		sweep: `DELETE FROM ` + schema + `.rate_limits WHERE key IN (SELECT key FROM ` + schema +
			`.rate_limits r WHERE (SELECT max(t) FROM unnest(r.times) AS t) + r.window_us <= ` +
			`coalesce($1::bigint, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint) LIMIT ` + strconv.Itoa(sweepBatch) + ` FOR UPDATE SKIP LOCKED)`,
		stopped: make(chan struct{}),
	}
	p.calls = groupcommit.Batcher[allowCall, allowResult]{Run: p.runCalls, MaxBatch: maxBatch, MaxInFlight: maxInFlight, Gather: true}
	ctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	go p.sweepLoop(ctx, cfg.SweepInterval)
	return p, nil
}

// Close stops the sweeper of idle keys, waiting for a batch under way.
// It does not close the pool. Allow still works after Close, but idle
// keys' rows then stay until another limiter on the schema sweeps them.
func (p *Limiter) Close() {
	p.stop()
	<-p.stopped
}

// Allow records one request for key if key made fewer than Limit requests
// in the last Window, counting the requests of every process on this
// database, and reports the outcome with the same fields as
// [github.com/imagegen/imagegen/ratelimit.Memory.Allow]. A refused request
// is not recorded. Any string is a key (one longer than 512 bytes, or
// that PostgreSQL's text refuses, is stored as its SHA-256). Allow fails
// only when the database does (or ctx ends before the call's batch is
// sent, when it returns at once, even while a batch of other checks is
// in flight; once sent, the batch runs to its end, bounded by 10 s). The
// error wraps the database's.
func (p *Limiter) Allow(ctx context.Context, key string) (imagegen.LimitResult, error) {
	c := allowCall{key: p.storedKey(key)}
	if p.now != nil {
		us := p.now().UnixMicro()
		c.now = &us
	}
	r, err := p.calls.Do(ctx, c)
	if err != nil {
		return imagegen.LimitResult{}, fmt.Errorf("ratelimit/postgres: allow: %w", err)
	}
	return rolling.Stored(r.allowed, p.limit, p.window, r.count, r.free, r.at), nil
}

// allowCall is one Allow's check: its stored key and its time (µs), nil
// for the database server's clock.
type allowCall struct {
	key string
	now *int64
}

// allowResult is rate_allow_many's answer to one check.
type allowResult struct {
	allowed  bool
	count    int
	free, at int64
}

// Batching bounds: checks per batch, batches in flight (of one Limiter).
// BenchmarkAllowHotKeys/Accepted (16 callers on 16 hot keys), three
// alternating runs of 4000 on a 2-core AMD EPYC shared with other work:
// 76 µs a check (38–89) against 275 µs (228–278) when each check was a
// transaction of its own, 101 B of WAL a check against 149. Two batches
// in flight: 99 µs (65–142) against 60 (48–84) for one in the same
// rounds, as the store's group commit found (maxBatchesInFlight there):
// the two take turns on the same hot rows. Two batches in flight of
// disjoint keys (a key always in the same one of two lanes), three
// alternating runs on a later machine of the kind: 78–90 µs against
// 68–87 for one lane, with more CPU a check (smaller batches, more
// statements).
const (
	maxBatch    = 64
	maxInFlight = 1
)

// runCalls runs a batch of checks, a lone one too, as one call of
// rate_allow_many, so in one transaction: each check in turn, in the
// order of their keys (the same order in every process, so that batches
// wanting the same rows never deadlock: each holds the rows it changed
// until it commits). A key checked twice goes twice, the second call
// counting after the first.
func (p *Limiter) runCalls(ctx context.Context, batch []*groupcommit.Call[allowCall, allowResult]) {
	order := batch
	if len(batch) > 1 {
		order = slices.Clone(batch)
		slices.SortStableFunc(order, func(a, b *groupcommit.Call[allowCall, allowResult]) int { return strings.Compare(a.Req.key, b.Req.key) })
	}
	keys := make([]string, len(order))
	nows := make([]*int64, len(order))
	for i, c := range order {
		keys[i], nows[i] = c.Req.key, c.Req.now
	}
	var res []allowResult
	rows, err := p.pool.Query(ctx, p.allow, keys, nows, p.window.Microseconds(), p.limit)
	if err == nil {
		res, err = pgx.CollectRows(rows, scanAllowResult)
	}
	if err == nil && len(res) != len(order) {
		err = fmt.Errorf("%d answers for %d checks", len(res), len(order))
	}
	if err != nil {
		p.resets.Note(err) // a pooler or server restart: the pool's other connections are dead too
		for _, c := range batch {
			c.Err = err
		}
		return
	}
	for i, c := range order {
		c.Res = res[i]
	}
}

// scanAllowResult reads one row of rate_allow_many.
func scanAllowResult(row pgx.CollectableRow) (allowResult, error) {
	var r allowResult
	err := row.Scan(&r.allowed, &r.count, &r.free, &r.at)
	return r, err
}

// sweepLoop deletes a batch of idle keys' rows every interval until ctx
// ends.
func (p *Limiter) sweepLoop(ctx context.Context, every time.Duration) {
	defer close(p.stopped)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p.sweepOnce(ctx)
	}
}

// sweepOnce deletes the rows of idle keys, by the database's clock
// (Config.Now's, when set), a batch a statement until a batch finds
// fewer than sweepBatch or the round's sweepTimeout ends. Errors are left
// for the next round: the rows stay until then, and Allow does not
// depend on them being gone.
func (p *Limiter) sweepOnce(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	var now *int64
	if p.now != nil {
		us := p.now().UnixMicro()
		now = &us
	}
	for {
		tag, err := p.pool.Exec(ctx, p.sweep, now)
		if err != nil || tag.RowsAffected() < sweepBatch {
			return
		}
	}
}
