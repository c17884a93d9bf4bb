// Package postgres is an imagegen.Store on PostgreSQL (pgx/v5, pgxpool),
// so that the credit balance lives in the host app's own database and an
// app can grant credits, charge web use and submit tasks inside its own
// transactions (SubmitTx, GrantTx, ChargeWebTx).
//
// # Schema
//
// Tables live in one schema (Config.Schema, default "imagegen"), so they
// can sit in the app's database beside its own tables; every statement
// names the schema, so the connections' search_path does not matter. The
// schema is built by versioned migrations embedded in the package and
// applied only by an explicit Migrate, MigrateTo or MigrateDown call (or
// `imagegen migrate -postgres URL`), never by New: a library must not
// change a database at start-up. Store.CheckSchema tells whether the
// schema is at the version this build needs.
//
// # Queue
//
// A claim takes the oldest ready pending tasks with FOR UPDATE SKIP
// LOCKED, so any number of workers claim concurrently without waiting on
// each other. Every change of a task is one statement (or one PL/pgSQL
// function for the refunding ones) that checks the fencing token
// (status = 'processing' AND attempt = n) in its WHERE clause, so a worker
// whose lease was lost changes nothing. A submit debits the balance with
// UPDATE … WHERE balance >= cost, appends the charge to the ledger and
// inserts the task in the same transaction: concurrent submits on one
// balance serialise on the account row and can never overdraw it (a
// CHECK constraint says so too).
//
// # Group commit
//
// Each commit waits for a disk flush, and submits of one owner serialise
// on the owner's account row, so one commit per submit would cap a busy
// owner at one submit per flush. Submits, successes and image bytes that
// arrive together therefore share one statement and one commit (at most
// 64 per batch, and at most 16 MiB of image bytes; one batch of each
// kind in flight, and the calls that arrive meanwhile make up the next;
// a lone call goes at once, so nothing waits for a batch to fill):
// submit_tasks takes a batch's submits in owner order, each charged or
// refused on its own, exactly as if they had come one by one, with a few
// statements per owner's run rather than per task; a batch of successes
// checks each task's own fencing token. A claim commits without waiting
// for its flush (synchronous_commit off for that transaction only): a
// claim lost to a database crash leaves the task pending, and the fencing
// token then refuses the worker's result, so the task simply runs again.
// Image bytes in the blobs table commit the same way: the success that
// records them commits after them and waits for its flush, and the WAL is
// flushed in order, so bytes that a task's record points at are always on
// disk (bytes of a success lost to a crash are swept as orphans).
// Config.AsyncSuccess extends that to successes, for throughput, at the
// price described there. Submits, refunds, grants and charges always
// wait for their flush.
//
// # Wake-ups
//
// Two LISTEN/NOTIFY channels, on one dedicated connection per Store
// (outside the pool, opened on first use; Config.ListenConfig names it
// when the pool goes through a transaction pooler, below): "<schema>.finished" carries
// the ids of finished tasks (WatchTask, so Prefer: wait returns at once)
// and "<schema>.queued" says that tasks may be ready (WorkReady, for idle
// workers in other processes). PostgreSQL serialises the commits of
// notifying transactions database-wide, which would cap submits at one
// disk flush at a time; so a submit and a retry notify just after they
// commit, in a separate statement that carries every notification due
// meanwhile. (Should the process die in between, idle workers notice at
// their next poll.) Successes notify inside the statement that stores
// them: their batches commit one at a time anyway (group commit, below),
// so that costs them nothing and saves a statement a batch. Failures,
// cancels and lease expiries notify inside their own transaction, and
// SubmitTx inside the host's, so workers wake only if the host commits. Give imagegen.Config.WorkReady
// the store's WorkReady so that idle workers hear of it. When the
// listening connection is lost, every watcher is woken (they re-read
// their task) and woken again every second until it is back (the polling
// fallback); the worker's own PollInterval remains the fallback for idle
// workers.
//
// # Transactions of the host app
//
// SubmitTx, GrantTx and ChargeWebTx run in a pgx.Tx of the app's, beside
// its own writes: a rollback leaves no credit moved and no task, a commit
// makes everything visible at once. They apply the rules of
// Service.Submit, Grant and ChargeWeb (Service.SubmitWith, which logs and
// counts the submission like any other,
// imagegen.GrantEntry, imagegen.WebChargeEntry), and a refusal raises no
// SQL error, so the transaction stays usable.
//
// # Transaction poolers
//
// Behind PgBouncer in transaction mode (as many managed PostgreSQL
// offerings put in front), make the pool with PoolerConfig (no named
// prepared statements), give Config.ListenConfig a direct connection
// for LISTEN, and run Migrate on a direct connection too. Every
// statement then keeps no session state: each runs in its own
// transaction or inside one, and NOTIFY goes through the pooler (it is
// delivered at commit, whatever the session), so long-polls and idle
// workers wake as fast as on a direct connection.
//
// # Broken connections
//
// When the server or a pooler in front of it restarts, every idle
// connection of the pool is dead, and each would fail the one call that
// next uses it before the pool let it go. The first statement that finds
// its connection broken (the connection closed under it, or the server
// saying it is shutting down) empties the pool instead
// (pgxpool.Pool.Reset, at most once a second; connections in use close
// when they come back): the calls in flight at that moment fail, and
// the next ones run on new connections. A call that failed on a stale
// connection changed nothing (nothing of it reached a server); one cut
// during its commit may or may not have committed, as on any database.
// A batch of submits is settled before its callers get the error: when
// its timeout passes (10 s) or its connection is cut after it was sent,
// the server may still commit it (the backend goes on with what it
// received, and pgx's cancel request is best effort), so the store
// cancels the batch's statement itself and waits for its transaction
// to end (named by its id, which the batch's first statement answers
// before submit_tasks runs, in the same round trip; submitbatch.go),
// then answers whether it committed. When it cannot tell (the answer
// was lost before that id came back, or the server did not answer the
// settling), the error wraps imagegen.ErrOutcomeUnknown, and an
// idempotent submit keeps its key in flight rather than charge a retry
// again, until a later retry settles it (the record names the task it
// asked for, migration 23; see imagegen.IdempotencyStore).
// A statement the server refused, a deadline or a caller that gave up
// never resets the pool, so a client cannot empty it by cancelling its
// requests.
//
// # Rate limits
//
// Migration 2 adds the table and function of ratelimit/postgres.New, the
// per-key limiter shared by every process on the database (also used for
// failed authentications), so a deployment needs nothing but PostgreSQL.
//
// # Time
//
// Statements read the database server's clock (now()), so processes with
// skewed clocks agree on leases. Config.Clock replaces it with a time
// passed as a query parameter, for tests that move time by hand.
//
// # Retention
//
// A finished task and its images are hidden once Config.Retention has
// passed, and removed by Sweep in bounded batches (DELETE … WHERE id IN
// (SELECT … LIMIT n FOR UPDATE SKIP LOCKED)), so no long lock is ever
// held; expired idempotency records (an in-flight one that names its
// task once it is no longer kept to be settled) and console sessions
// (migration 5, PutSession) go the same way. RecoverExpired,
// which every worker calls regularly, also sweeps, at most once per
// Config.SweepInterval per Store. The credit ledger is kept whole.
// Provider statistics (migration 4, AddProviderStats) are kept for
// imagegen.ProviderStatsRetention: a Store deletes older buckets after an
// add, at most once every 10 minutes.
//
// # Images
//
// Image records are kept in the images table and their bytes in
// Config.Blobs (by default the blobs table, bytea); records are removed with their
// task by retention.
package postgres

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/groupcommit"
	"github.com/imagegen/imagegen/internal/pgreset"
	"github.com/imagegen/imagegen/internal/throttle"
	"github.com/imagegen/imagegen/store/internal/leases"
)

var _ imagegen.Store = (*Store)(nil)

// DefaultSchema is the schema of the store's tables when Config.Schema
// is empty.
const DefaultSchema = "imagegen"

// DefaultRetention is how long finished tasks and images are kept when
// Config.Retention is zero.
const DefaultRetention = 24 * time.Hour

// DefaultSweepInterval is how often RecoverExpired also sweeps expired
// records, when Config.SweepInterval is zero.
const DefaultSweepInterval = time.Minute

// Group commit of submits, successes and image bytes: at most maxBatchesInFlight
// batches of at most maxBatch tasks are in flight at once (of each
// kind); calls that arrive meanwhile wait for the next batch.
const (
	maxBatch           = 64
	maxBatchesInFlight = 1 // more in flight made batches smaller and throughput lower (bench module)
	// maxBlobBatchBytes bounds the image bytes of one batch (images are
	// a few MB each), so that one statement stays small.
	maxBlobBatchBytes = 16 << 20
)

// Config configures a Store.
type Config struct {
	// Schema holds the store's tables (default DefaultSchema). Stores on
	// different schemas of one database are independent.
	Schema string
	// Retention is how long a finished task and its images are kept.
	// Default DefaultRetention.
	Retention time.Duration
	// SweepInterval is how often RecoverExpired removes expired records
	// (default DefaultSweepInterval; negative: never, call Sweep
	// yourself).
	SweepInterval time.Duration
	// SweepBatch bounds the rows one DELETE removes (default 500).
	SweepBatch int
	// AsyncSuccess lets a success commit without waiting for its WAL
	// flush (synchronous_commit off for that transaction only), so that
	// successes are stored a disk flush sooner. The price: a
	// crash of the database server (not of a worker) may undo the
	// successes of its last fraction of a second (at most three
	// wal_writer_delay); those tasks go back to processing and run again
	// when their lease ends, still charged once. Submits and refunds
	// always wait for their flush. Default false: a success is durable
	// once CompleteTask returns.
	AsyncSuccess bool
	// Blobs keeps the bytes of images. Default: the blobs table of the
	// schema (durable with the rest of the store); object storage
	// (blob/s3) suits large volumes.
	Blobs imagegen.BlobStore
	// Clock, when set, replaces the database server's clock (tests only):
	// its time is passed to every statement.
	Clock imagegen.Clock
	// ListenConfig, when set, is the connection that LISTENs for the
	// store's notifications (wake-ups of long-polls and idle workers)
	// instead of a connection made like the pool's. Set it to a direct
	// connection to the server when the pool goes through a transaction
	// pooler (PgBouncer with pool_mode = transaction): a pooled
	// connection cannot keep a LISTEN, since the server session behind
	// it changes between transactions. With it set, New refuses a pool
	// that keeps named prepared statements (pgx's default,
	// QueryExecModeCacheStatement) or executes the unnamed one in a
	// round trip after the one that prepared it
	// (QueryExecModeDescribeExec), which a transaction pooler loses
	// too: make the pool with DefaultQueryExecMode QueryExecModeExec
	// (PoolerConfig does). The store keeps no other session state on
	// its connections (synchronous_commit is set per transaction). Run
	// migrations (Migrate) on the direct connection as well.
	ListenConfig *pgx.ConnConfig
}

// PoolerConfig makes cfg fit a transaction pooler such as PgBouncer:
// statements run without named prepared statements
// (QueryExecModeExec: one round trip, parameter types from the Go
// values). Give the store a direct connection in Config.ListenConfig.
func PoolerConfig(cfg *pgxpool.Config) {
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
}

// ErrPreparedStatements: Config.ListenConfig says the pool goes through a
// transaction pooler, but the pool relies on a prepared statement across
// round trips: named ones (pgx's default, cache_statement) or the
// unnamed one that describe_exec prepares and then executes.
var ErrPreparedStatements = errors.New("postgres store: a pool behind a transaction pooler must not rely on prepared statements across round trips (use postgres.PoolerConfig, or default_query_exec_mode=exec in the URL)")

// poolerSafe reports whether a pool in mode needs no prepared statement
// to outlive its round trip, as behind a transaction pooler, where the
// next round trip may reach another server session: cache_statement
// keeps named prepared statements, and describe_exec prepares the unnamed
// statement in one round trip and executes it in the next. The other
// modes (exec, cache_describe, simple_protocol) parse each statement in
// the round trip that runs it.
func poolerSafe(mode pgx.QueryExecMode) bool {
	return mode != pgx.QueryExecModeCacheStatement && mode != pgx.QueryExecModeDescribeExec
}

// Store is the PostgreSQL store. It is safe for concurrent use by any
// number of goroutines and processes.
type Store struct {
	pool      *pgxpool.Pool
	schema    string // unquoted
	quoted    string // quoted, for SQL
	retention time.Duration
	blobStore imagegen.BlobStore // nil: the blobs table
	clock     imagegen.Clock     // nil: server time
	finished  string             // NOTIFY channel of finished task ids
	queued    string             // NOTIFY channel of "tasks may be ready"

	successCommit string // synchronous_commit of successes: "on" or "off"

	sweepEvery time.Duration
	sweepBatch int
	sweeps     throttle.Gate // once SweepInterval, for maybeSweep

	statsTrimmed atomic.Int64 // Unix time of the last removal of old provider stats

	sqlCache sync.Map // template -> SQL with the schema filled in
	// prepareBatch: the pool keeps prepared statements (pgx's default
	// mode), and so does the submit batch (batchStatements).
	prepareBatch bool
	submitName   string // submitSQL's prepared statement (submitStatementName)
	creates      groupcommit.Batcher[createReq, createRes]
	completes    groupcommit.Batcher[completeReq, bool]
	blobPuts     groupcommit.Batcher[blobPut, struct{}]
	queuedNote   notifier // "tasks may be ready", after submits and retries
	listen       *listener
	resets       *pgreset.Pool // empties the pool when a connection is found broken (wrapErr)
}

// New returns a Store on pool. It does not touch the database: apply
// the migrations first (Migrate), and call Close when done.
func New(pool *pgxpool.Pool, c Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("postgres store: pool is required")
	}
	if c.Retention < 0 {
		return nil, fmt.Errorf("postgres store: Config.Retention must not be negative (got %v)", c.Retention)
	}
	if c.SweepBatch < 0 {
		return nil, fmt.Errorf("postgres store: Config.SweepBatch must not be negative (got %d)", c.SweepBatch)
	}
	mode := pool.Config().ConnConfig.DefaultQueryExecMode
	if c.ListenConfig != nil && !poolerSafe(mode) {
		return nil, ErrPreparedStatements
	}
	name := schemaName(c.Schema)
	s := &Store{
		pool:          pool,
		resets:        pgreset.New(pool),
		schema:        name,
		quoted:        pgx.Identifier{name}.Sanitize(),
		retention:     cmp.Or(c.Retention, DefaultRetention),
		clock:         c.Clock,
		blobStore:     c.Blobs,
		finished:      channelName(name, "finished"),
		queued:        channelName(name, "queued"),
		sweepEvery:    cmp.Or(c.SweepInterval, DefaultSweepInterval),
		successCommit: map[bool]string{false: "on", true: "off"}[c.AsyncSuccess],
		sweepBatch:    cmp.Or(c.SweepBatch, 500),
	}
	s.prepareBatch = mode == pgx.QueryExecModeCacheStatement
	s.submitName = submitStatementName(s.sql(submitSQL))
	s.queuedNote = notifier{send: func(p []string) { s.notifyAll(s.queued, p) }}
	s.creates = groupcommit.Batcher[createReq, createRes]{Run: s.createBatch, MaxBatch: maxBatch, MaxInFlight: maxBatchesInFlight,
		Gather: true}
	s.completes = groupcommit.Batcher[completeReq, bool]{Run: s.completeBatch, MaxBatch: maxBatch, MaxInFlight: maxBatchesInFlight,
		Size: completeSize, MaxSize: maxBlobBatchBytes, Gather: true}
	s.blobPuts = groupcommit.Batcher[blobPut, struct{}]{Run: s.putBlobBatch, MaxBatch: maxBatch, MaxInFlight: maxBatchesInFlight,
		Size: func(p blobPut) int { return len(p.data) }, MaxSize: maxBlobBatchBytes, Gather: true}
	listenConfig := c.ListenConfig
	if listenConfig == nil {
		listenConfig = pool.Config().ConnConfig
	}
	s.listen = newListener(listenConfig, s.finished, s.queued)
	return s, nil
}

// Close stops the store's listening connection. It does not close the
// pool, which belongs to the caller.
func (s *Store) Close() { s.listen.close() }

// Schema returns the store's schema name.
func (s *Store) Schema() string { return s.schema }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		s.resets.Note(err)
		return fmt.Errorf("postgres store: ping: %w", err)
	}
	return nil
}

// ErrSchemaVersion: the store's schema is not at the version this build
// needs (run the migrations).
var ErrSchemaVersion = errors.New("postgres store: schema not migrated to this version")

// CheckSchema returns ErrSchemaVersion, naming both versions, unless the
// schema is at LatestVersion.
func (s *Store) CheckSchema(ctx context.Context) error {
	v, err := SchemaVersion(ctx, s.pool, s.schema)
	if err != nil {
		return err
	}
	if want := LatestVersion(); v != want {
		return fmt.Errorf("%w: schema %q is at version %d, this build needs %d (run `imagegen migrate` or postgres.Migrate)", ErrSchemaVersion, s.schema, v, want)
	}
	return nil
}

func schemaName(schema string) string { return cmp.Or(schema, DefaultSchema) }

// channelName names a NOTIFY channel of the schema: "<schema>.<what>",
// or a hash of the schema when that would pass PostgreSQL's 63-byte
// limit on identifiers.
func channelName(schema, what string) string {
	name := schema + "." + what
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(schema))
	return "imagegen_" + hex.EncodeToString(sum[:12]) + "." + what
}

// querier runs statements: the pool, or a transaction (the host app's).
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// sql fills the schema into a statement template. {schema} is the quoted
// schema, {now} the statement's time: parameter $1 (the injected clock's
// time) or, when $1 is NULL, the server's now().
func (s *Store) sql(template string) string {
	if v, ok := s.sqlCache.Load(template); ok {
		return v.(string)
	}
	q := strings.NewReplacer("{schema}", s.quoted, "{now}", "coalesce($1::timestamptz, now())").Replace(template)
	s.sqlCache.Store(template, q)
	return q
}

// nowArg is $1 of every statement: the injected clock's time, or nil for
// the server's clock.
func (s *Store) nowArg() any {
	if s.clock == nil {
		return nil
	}
	return s.clock.Now()
}

// micros is a duration as the microseconds that statements turn into an
// interval ($n * interval '1 microsecond').
func micros(d time.Duration) int64 { return d.Microseconds() }

// queryRows runs the statement template with args on the pool and reads
// every row with scan; op names the operation in its errors.
func queryRows[T any](ctx context.Context, s *Store, op string, scan pgx.RowToFunc[T], template string, args ...any) ([]T, error) {
	rows, err := s.pool.Query(ctx, s.sql(template), args...)
	if err != nil {
		return nil, s.wrapErr(op, err)
	}
	out, err := pgx.CollectRows(rows, scan)
	return out, s.wrapErr(op, err)
}

// storeName starts the store's errors.
const storeName = "postgres store"

// wrapErr names the operation; nil stays nil. Every error of the
// store's statements passes here or through fenced (or, where the
// store keeps no error, straight to s.resets.Note), so this is where a
// broken connection empties the pool (pgreset).
func (s *Store) wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	s.resets.Note(err)
	return fmt.Errorf("%s: %s: %w", storeName, op, err)
}

// fenced is the outcome of a change fenced by attempt (a worker's call
// on its lease: leases.Result), err passing to s.resets as in wrapErr.
func (s *Store) fenced(id string, attempt int, held bool, err error) error {
	s.resets.Note(err)
	return leases.Result(storeName, id, attempt, held, err)
}

// TaskRetention is how long the store keeps a finished task and its
// images (Config.Retention, or DefaultRetention): the Service keeps no
// idempotency record longer (imagegen.TaskRetainer).
func (s *Store) TaskRetention() time.Duration { return s.retention }
