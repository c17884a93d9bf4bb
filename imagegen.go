package imagegen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/internal/groupcommit"
	"github.com/imagegen/imagegen/internal/logbuf"
	"github.com/imagegen/imagegen/internal/memo"
	"github.com/imagegen/imagegen/internal/pgtext"
)

// Config configures a Service. Store and Model are required; every other
// field has a default, filled by New.
type Config struct {
	Store  Store
	Model  Model
	Clock  Clock        // default SystemClock
	Logger *slog.Logger // default slog.Default()
	// Observer is told of submits, claims, finishes, refunds, provider
	// requests and fallbacks, for metrics (package metrics). Default:
	// NopObserver.
	Observer Observer

	// WorkerConfig tunes what Run does (its fields read as Config's:
	// c.Workers, c.MaxAttempts). Only processes that run workers need
	// it, but for MaxAttempts, which lease recovery applies wherever it
	// runs.
	WorkerConfig

	// BlobTimeout bounds each call to the store's BlobStore (default
	// DefaultBlobTimeout, 10s): Put, Open, Stat, Delete, each read of a
	// download's bytes, and the wait for each blob of a List. A call that
	// does not answer in time fails with ErrBlobTimeout: a download
	// answers 504, a worker retries the task (or fails and refunds it on
	// its last attempt), so an object store that stops answering holds
	// nothing for longer than this.
	BlobTimeout time.Duration

	// MaxKeysPerOwner bounds the API keys one owner may hold unrevoked
	// (CreateKey refuses another until one is revoked), so that nobody
	// multiplies the per-key rate limit or fills the store with keys
	// (default DefaultMaxKeysPerOwner; negative: no bound). Keys an
	// operator imports (ImportKey) are not refused.
	MaxKeysPerOwner int
	// RevokedKeysKept is how many revoked keys an owner's key list keeps
	// (shown as revoked, with their last use); on each revoke the oldest
	// beyond it are deleted, so that a create-and-revoke loop does not
	// grow the store (0 takes DefaultRevokedKeysKept; negative keeps all;
	// there is no setting that keeps none).
	RevokedKeysKept int

	// IdempotencyTTL is how long SubmitIdempotent replays a submission's
	// outcome for its key (default DefaultIdempotencyTTL), at most the
	// store's retention when the store says it (TaskRetainer: the
	// stores of this repository do); set it to the store's retention
	// for a store that does not.
	IdempotencyTTL time.Duration
	// MaxPending is how many pending tasks one owner may have: a submit
	// beyond it is refused (ErrQueueFull), nothing charged (default
	// DefaultMaxPending; negative: no limit).
	MaxPending int

	// AllowHTTPCallbacks lets callback_url be plain http or an address
	// that is not public, such as localhost (development); by default it
	// must be https to a public address. Either way deliveries go through
	// the SSRF guard of the webhook sender.
	AllowHTTPCallbacks bool
	// WebhookSecretGrace is how long after RotateWebhookSecret deliveries
	// are still signed with the secret it replaced, besides the new one,
	// so that receivers have that long to take the new secret (default
	// DefaultWebhookSecretGrace, 24h).
	WebhookSecretGrace time.Duration

	// ImageInputGuard is the address policy of the fetcher the model
	// fetches image_input URLs with: normally that *fetch.Fetcher itself.
	// Submit refuses (a ValidationError, nothing charged) a URL whose
	// host it refuses whatever DNS answers (fetch.Config.RefusedHost: a
	// loopback, private, link-local, … IP literal in any spelling, or a
	// localhost name), since fetching it could only fail. Names that need
	// DNS are accepted: the fetcher checks their addresses when it
	// connects. Default: the default fetch.Config, which refuses all of
	// them; a service whose fetcher has AllowPrivate (development) or
	// AllowHosts must set it to that fetcher (or its fetch.Config), or
	// such URLs are refused at submit.
	ImageInputGuard HostGuard
}

// HostGuard is the address policy of a guarded fetcher, asked about the
// host of a URL when it is submitted; *fetch.Fetcher and fetch.Config
// are HostGuards.
type HostGuard interface {
	// RefusedHost reports whether the fetcher refuses every connection
	// to host (a URL's Hostname) whatever DNS answers, and names what it
	// refuses (an address, or "localhost").
	RefusedHost(host string) (what string, refused bool)
}

// WorkerConfig configures the workers of Service.Run: how many run at
// once, their time limits, leases and retries, and the sweep of image
// bytes left behind. Every field has a default, filled by New.
type WorkerConfig struct {
	// Workers is how many generations Run executes at once (default 4).
	// A generation's slot is free again as soon as the model answers:
	// storing the outcome (image bytes, then the task's record) goes on
	// beside the next generation, so outcomes that are stored at the
	// same time share a commit. At most 4×Workers outcomes wait to be
	// stored at once (their images held in memory); beyond that a
	// finished generation keeps its slot until one is stored.
	Workers int
	// GenerateTimeout bounds one attempt of one generation (default 2m).
	GenerateTimeout time.Duration
	// LeaseDuration is how long a claimed task stays with its worker
	// without a renewal (default 30s). Workers renew at a third of it,
	// from the claim until the attempt's outcome (the image bytes too)
	// is stored.
	LeaseDuration time.Duration
	// MaxAttempts is how many times a task is tried before it fails
	// (default 3). Lease expiries and retryable model errors both count.
	MaxAttempts int
	// RetryBackoff is the delay before the second attempt; it doubles
	// for each further attempt, up to MaxRetryBackoff (defaults 2s, 1m).
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration
	// PollInterval is how often an idle worker looks for work that was
	// not submitted through this process (default 250ms).
	PollInterval time.Duration
	// WorkReady, when set, signals that tasks may have become ready in
	// another process (a store's cross-process notification, such as
	// postgres.Store.WorkReady), so that idle workers claim at once
	// instead of at their next poll.
	WorkReady <-chan struct{}
	// ShutdownTimeout is how long Run waits, after its context ends, for
	// running generations to finish before it cancels them and gives
	// their tasks back to the queue (default 30s).
	ShutdownTimeout time.Duration
	// Limits are the caps and rates these workers enforce, through the
	// store, when they claim tasks: running tasks per owner and per
	// model, and starts per minute per model (docs/scheduling.md). Every
	// process on one store should set the same. Zero: no caps (fair
	// share across owners still applies).
	Limits Limits

	// BlobSweepInterval is how often Run deletes image bytes whose record
	// is gone (SweepBlobs): expired images, and orphans of crashes
	// (default 5m).
	BlobSweepInterval time.Duration
	// OrphanGrace is how old a blob without a record must be before
	// SweepBlobs deletes it (default 10m). It must exceed the time from
	// writing an image's bytes to writing its record (BlobTimeout plus
	// 20s: see MinOrphanGrace) plus any clock skew between this process
	// and the BlobStore. New refuses one under
	// max(MinOrphanGrace, OrphanGraceFor(BlobTimeout)).
	OrphanGrace time.Duration
}

// MinOrphanGrace is the shortest Config.OrphanGrace at the default
// BlobTimeout (OrphanGraceFor(DefaultBlobTimeout)), and the shortest at
// any shorter BlobTimeout.
const MinOrphanGrace = DefaultBlobTimeout + recordTimeout + groupcommit.DefaultTimeout + 5*time.Second

// OrphanGraceFor is the shortest Config.OrphanGrace with Config.BlobTimeout
// blobTimeout: longer than the time from an image's bytes to its record.
// The worker stores a success's images at once, each Put bounded by
// blobTimeout (the first may be written up to blobTimeout before the
// last), then gives the record 10s, but the stores of this module send a
// success in a group commit, whose batch, once taken (just before that
// deadline, say), runs up to its own timeout, 10s more.
func OrphanGraceFor(blobTimeout time.Duration) time.Duration {
	return max(MinOrphanGrace, blobTimeout+recordTimeout+groupcommit.DefaultTimeout+5*time.Second)
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.ImageInputGuard == nil {
		c.ImageInputGuard = fetch.Config{} // the default fetcher's policy: no address that is not public
	}
	c.Workers = cmp.Or(c.Workers, 4)
	c.GenerateTimeout = cmp.Or(c.GenerateTimeout, 2*time.Minute)
	c.LeaseDuration = cmp.Or(c.LeaseDuration, 30*time.Second)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, 3)
	c.RetryBackoff = cmp.Or(c.RetryBackoff, 2*time.Second)
	c.MaxRetryBackoff = cmp.Or(c.MaxRetryBackoff, time.Minute)
	c.PollInterval = cmp.Or(c.PollInterval, 250*time.Millisecond)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, 30*time.Second)
	c.BlobTimeout = cmp.Or(c.BlobTimeout, DefaultBlobTimeout)
	c.BlobSweepInterval = cmp.Or(c.BlobSweepInterval, 5*time.Minute)
	c.OrphanGrace = cmp.Or(c.OrphanGrace, 10*time.Minute)
	c.MaxKeysPerOwner = cmp.Or(c.MaxKeysPerOwner, DefaultMaxKeysPerOwner)
	c.RevokedKeysKept = cmp.Or(c.RevokedKeysKept, DefaultRevokedKeysKept)
	c.IdempotencyTTL = cmp.Or(c.IdempotencyTTL, DefaultIdempotencyTTL)
	if r, ok := c.Store.(TaskRetainer); ok && r.TaskRetention() > 0 {
		c.IdempotencyTTL = min(c.IdempotencyTTL, r.TaskRetention())
	}
	c.MaxPending = cmp.Or(c.MaxPending, DefaultMaxPending)
	c.WebhookSecretGrace = cmp.Or(c.WebhookSecretGrace, DefaultWebhookSecretGrace)
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("imagegen: Config.Store is required")
	case c.Model == nil:
		return errors.New("imagegen: Config.Model is required")
	case c.Workers < 0:
		return fmt.Errorf("imagegen: Config.Workers must not be negative (got %d)", c.Workers)
	case c.GenerateTimeout < 0, c.LeaseDuration < 0, c.RetryBackoff < 0,
		c.MaxRetryBackoff < 0, c.PollInterval < 0, c.ShutdownTimeout < 0, c.BlobSweepInterval < 0, c.IdempotencyTTL < 0,
		c.BlobTimeout < 0:
		return errors.New("imagegen: Config durations must not be negative")
	case c.OrphanGrace < OrphanGraceFor(c.BlobTimeout):
		return fmt.Errorf("imagegen: Config.OrphanGrace must be at least %v with Config.BlobTimeout %v, the longest a blob can wait for its record (got %v)",
			OrphanGraceFor(c.BlobTimeout), c.BlobTimeout, c.OrphanGrace)
	case c.WebhookSecretGrace < 0:
		return fmt.Errorf("imagegen: Config.WebhookSecretGrace must not be negative (got %v)", c.WebhookSecretGrace)
	case c.MaxAttempts < 1:
		return fmt.Errorf("imagegen: Config.MaxAttempts must be at least 1 (got %d)", c.MaxAttempts)
	}
	if err := c.Limits.Validate(); err != nil {
		return fmt.Errorf("imagegen: Config.Limits: %w", err)
	}
	return nil
}

// Service is the image-generation task service: it takes submissions,
// answers task queries, and (in Run) executes generations. It is safe for
// concurrent use; any number of Services may share one Store.
type Service struct {
	cfg Config
	log *slog.Logger
	// blobs is the store's BlobStore with Config.BlobTimeout on every
	// call; the Service reaches image bytes only through it.
	blobs BlobStore
	wake  chan struct{} // nudges idle local workers after a submit
	// providers counts provider calls and fallbacks until the next
	// FlushProviderStats.
	providers providerTally
	// keyHashes are the hashes of recently presented API keys.
	keyHashes *memo.Strings
	// late are the tasks of lost submits still to cancel (CancelLostSubmit).
	late lateCancels
	// unreadable are the blobs whose records SweepBlobs could not read,
	// kept without a lookup until a sweep goes through the listing.
	unreadable unreadableBlobs
	// cursorKeys seals and opens ListTasks' and ListLedger's cursors.
	cursorKeys *cursorKeys
}

// New returns a Service for cfg, or an error naming the bad field.
func New(cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	blobs := timedBlobs{s: cfg.Store.Blobs(), d: cfg.BlobTimeout}
	return &Service{cfg: cfg, log: cfg.Logger, blobs: blobs, wake: make(chan struct{}, 1), keyHashes: memo.New(HashAPIKey),
		late: lateCancels{wake: make(chan struct{}, 1)}, cursorKeys: newCursorKeys()}, nil
}

// Submission is what a submit made: the new task (pending), its charge
// and the balance after it. The HTTP API sends it as wire.Submitted.
type Submission struct {
	TaskID           string
	Status           Status // StatusPending
	CreditsUsed      int64  // the task's cost, debited
	CreditsRemaining int64  // the owner's balance after the charge
}

// Submit validates req, prices it with the model, and creates a pending
// task for owner, debiting the price in the same atomic store operation.
// Errors: *ValidationError (ErrInvalidParams), ErrInsufficientCredits;
// a store that failed after it was asked to make the task (a timeout, a
// connection lost after the write) gives a *SubmitUnknownError naming
// the task that may exist, charged.
func (s *Service) Submit(ctx context.Context, owner string, req Request) (Submission, error) {
	sub, asked, err := s.submit(ctx, owner, "", req, s.cfg.Store.CreateTask)
	if err != nil && asked != nil {
		return sub, &SubmitUnknownError{TaskID: asked.ID, Err: err}
	}
	return sub, err
}

// SubmitUnknownError is a submit whose store call failed after it was
// asked to make the task: the task TaskID may exist, charged, or not.
// A caller that will not come back for it (Cancel(owner, TaskID)
// refunds it, or answers ErrTaskNotFound when it was not made)
// settles it; the error wraps the store's. When that wraps
// ErrOutcomeUnknown the task may be made after ErrTaskNotFound:
// CancelLostSubmit also cancels it then.
type SubmitUnknownError struct {
	TaskID string
	Err    error
}

func (e *SubmitUnknownError) Error() string { return e.Err.Error() }

// Unwrap is the store's error.
func (e *SubmitUnknownError) Unwrap() error { return e.Err }

// ErrOtherStore: SubmitWith was given a store the service does not run on.
var ErrOtherStore = errors.New("imagegen: the service runs on another store")

// SubmitWith is Submit with the task created by create instead of the
// store's CreateTask: a store that creates tasks inside a host app's own
// transaction (postgres.Store.SubmitTx) calls it, so that such a task
// obeys exactly the rules of Submit and is logged and counted
// (Observer.TaskSubmitted) like every other. on is the store create
// writes to: it must be the service's (Config.Store, the same value),
// else SubmitWith returns ErrOtherStore and creates nothing, since the
// service's workers would never see the task. create must do what
// Store.CreateTask does (with the CreateParams it is given: the owner's
// pending cap) and return the balance after the charge.
// The submission is counted when create returns, before the host's
// transaction commits: one that is rolled back afterwards was counted
// all the same.
func (s *Service) SubmitWith(ctx context.Context, owner string, req Request, on Store, create func(context.Context, *Task, CreateParams) (balance int64, err error)) (Submission, error) {
	if on != s.cfg.Store {
		return Submission{}, ErrOtherStore
	}
	sub, _, err := s.submit(ctx, owner, "", req, create)
	return sub, err
}

// submit prepares owner's task (of id, or a new id when id is ""),
// creates it with create, and logs and counts it. On an error it also returns the task create was asked to
// make, or nil when create was not called or refused it for certain
// (short balance, full queue, bad input): only then is it known that no
// task exists. After any other error (a timeout, a connection lost
// after the write, replicas that did not confirm) the task may exist.
func (s *Service) submit(ctx context.Context, owner, id string, req Request, create func(context.Context, *Task, CreateParams) (int64, error)) (Submission, *Task, error) {
	t, err := s.prepareTask(ctx, owner, id, req)
	if err != nil {
		return Submission{}, nil, err
	}
	balance, err := create(ctx, t, s.createParams())
	if err != nil {
		err = fmt.Errorf("imagegen: submit: %w", err)
		if errors.Is(err, ErrInsufficientCredits) || errors.Is(err, ErrQueueFull) || errors.Is(err, ErrInvalidParams) {
			return Submission{}, nil, err
		}
		return Submission{}, t, err
	}
	s.cfg.Observer.TaskSubmitted(req.Scene, t.Model, t.Cost)
	if !submitLogged(ctx, t) && s.log.Enabled(ctx, slog.LevelInfo) { // the check keeps the hot path free of the attributes' allocation
		logbuf.Log(ctx, s.log, slog.LevelInfo, "task submitted", slog.String("task_id", t.ID), slog.String("request_id", t.RequestID),
			slog.String("model", t.Model), slog.Int64("cost", t.Cost))
	}
	s.wakeWorkers()
	return Submission{TaskID: t.ID, Status: StatusPending, CreditsUsed: t.Cost, CreditsRemaining: balance}, t, nil
}

// prepareTask is Submit without the store: it validates req, prices it
// with the model and returns the pending task to create for owner (of
// id, or a new ID when id is ""), storing nothing.
// Errors: *ValidationError (ErrInvalidParams), or the model's.
func (s *Service) prepareTask(ctx context.Context, owner, id string, req Request) (*Task, error) {
	if !pgtext.Storable(owner) { // a host app's (SubmitWith): PostgreSQL would refuse it, aborting the host's transaction
		return nil, invalid("owner", notStorable)
	}
	callback, err := req.validate(s.cfg.ImageInputGuard)
	if err != nil {
		return nil, err
	}
	if err := s.checkCallback(callback); err != nil {
		return nil, err
	}
	req.Normalize()
	plan, err := s.cfg.Model.Plan(req)
	if err != nil {
		if errors.Is(err, ErrInvalidParams) {
			return nil, err
		}
		return nil, fmt.Errorf("imagegen: plan: %w", err)
	}
	if err := checkCost(plan.Cost); err != nil {
		return nil, fmt.Errorf("imagegen: model %q: %w", plan.Model, err)
	}
	req.Seed = seedFor(req, plan)
	if id == "" {
		id = NewOwnedID(owner)
	}
	return &Task{
		ID:        id,
		Owner:     owner,
		Request:   req,
		Model:     plan.Model,
		Cost:      plan.Cost,
		RequestID: RequestID(ctx),
		Status:    StatusPending,
	}, nil
}

// wakeWorkers nudges an idle local worker: there is work.
func (s *Service) wakeWorkers() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Task returns owner's task, or ErrTaskNotFound when it does not exist,
// has expired, or belongs to someone else.
func (s *Service) Task(ctx context.Context, owner, id string) (*Task, error) {
	if !taskIDOK(id) {
		return nil, ErrTaskNotFound
	}
	t, err := s.cfg.Store.Task(ctx, owner, id)
	if err != nil {
		return nil, fmt.Errorf("imagegen: task: %w", err)
	}
	return t, nil
}

// Cancel is the owner's own cancel: it fails owner's pending or
// processing task with error "cancelled" (CodeCancelled), and a running
// generation is stopped. A pending task is refunded; a processing one
// keeps its charge, since its generation had begun and a provider may
// bill for it (CancelWith with CancelParams.KeepStartedCharge). A
// finished task is unchanged: ErrInvalidTransition. Another owner's task
// is ErrTaskNotFound.
func (s *Service) Cancel(ctx context.Context, owner, id string) error {
	_, err := s.CancelWith(ctx, owner, id, CancelParams{KeepStartedCharge: true})
	return err
}

// CancelWith is Cancel with its refund rule given: with p's zero value
// it refunds a running task too, for a cancel that is the service's
// choice rather than the owner's (a caller the server stopped waiting
// for, a lost submit's answer). It returns the credits it gave back.
func (s *Service) CancelWith(ctx context.Context, owner, id string, p CancelParams) (refund int64, err error) {
	if !taskIDOK(id) {
		return 0, fmt.Errorf("imagegen: cancel: %w", ErrTaskNotFound)
	}
	return s.cancel(ctx, owner, id, nil, p)
}

// taskIDOK reports whether id could name a task: 1 to 128 bytes of
// valid UTF-8 without NUL, as every id NewOwnedID makes is. Any other
// names no task and is not asked of the store: PostgreSQL refuses such
// a string as a query's argument (a server error for what a client put
// in a URL's path).
func taskIDOK(id string) bool {
	return id != "" && len(id) <= 128 && pgtext.Storable(id)
}

// cancel cancels owner's task id as p says, counts and logs it, and
// returns the credits it gave back, as the store reports them (none for
// a started task whose charge p keeps; none for a task an operator
// retried free of charge: it was refunded then). before is the task as
// read just before (nil: cancel reads it), for its model and request id
// in the count and the log line.
func (s *Service) cancel(ctx context.Context, owner, id string, before *Task, p CancelParams) (refund int64, err error) {
	if before == nil {
		before, _ = s.cfg.Store.Task(ctx, owner, id)
	}
	if refund, err = s.cfg.Store.CancelTask(ctx, owner, id, p); err != nil {
		return 0, fmt.Errorf("imagegen: cancel: %w", err)
	}
	t := before
	if t == nil { // the read before failed; read the task back for its model
		if t, err = s.cfg.Store.Task(ctx, owner, id); err != nil {
			s.log.WarnContext(ctx, "task cancelled; could not read it back to count it", "task_id", id, "refunded", refund, "err", err)
			t = &Task{ID: id}
		}
	}
	s.cfg.Observer.TaskFinished(t.Model, StatusFailed, CodeCancelled, 0)
	if refund > 0 {
		s.cfg.Observer.CreditsRefunded(refund)
	}
	s.log.InfoContext(ctx, "task cancelled", "task_id", id, "request_id", RequestID(ctx),
		"submit_request_id", t.RequestID, "model", t.Model, "cost", t.Cost, "refunded", refund)
	return refund, nil
}

// createParams are the rules of Submit for the store's CreateTask: the
// owner's pending cap.
func (s *Service) createParams() CreateParams {
	return CreateParams{MaxPending: max(s.cfg.MaxPending, 0)}
}
