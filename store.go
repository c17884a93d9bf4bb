package imagegen

import (
	"context"
	"time"
)

// Store is the whole storage contract of the service: tasks and the work
// queue with leases, image records (their bytes are in a [BlobStore],
// see blobstore.go), the credit ledger, API keys, idempotency
// records, task listing, finish notifications, webhook deliveries,
// shared secrets and console sessions. Every part is required; this file is the one place
// that defines what a backend must do.
//
// Every state change is atomic and conditional (compare-and-set), so any
// number of API processes and workers may share one Store. A Store reads
// time from its own clock (the memory store from an injected Clock, Redis
// from its server), so lease and retention arithmetic never mixes two
// clocks.
//
// Implementations must pass the conformance suite in store/storetest.
// Backends in this module: store/memory, store/redis and store/postgres.
type Store interface {
	TaskStore
	SchedulerStore
	ImageStore
	TaskLister
	TaskWatcher
	CreditStore
	KeyStore
	IdempotencyStore
	WebhookStore
	SecretStore
	SessionStore
	OperatorStore
}

// TaskStore is the task queue with leases.
type TaskStore interface {
	// CreateTask debits t.Cost from t.Owner's balance, appends the charge
	// to the ledger (reference "task:"+t.ID), and stores t as pending, all
	// in one atomic step. It returns the balance after the charge, or
	// ErrInsufficientCredits (and changes nothing) when the balance is
	// short, or ErrQueueFull (and changes nothing) when p.MaxPending is
	// set and the owner already has that many pending tasks. The task
	// joins its owner's line in the fair-share order (docs/scheduling.md).
	// An id already used is refused with an error wrapping
	// ErrDuplicateEntry, changing nothing: the id of a task that exists;
	// a store whose ledger keeps each charge's reference refuses the id
	// of one that retention has removed too (the memory store,
	// PostgreSQL). The Service asks for a used id only to settle an
	// idempotent submission, within its record's life, which it keeps no
	// longer than a TaskRetainer's retention.
	// After any other error the task may exist; a store that cannot
	// tell whether it may still come to exist later (a write sent that
	// may yet commit) wraps ErrOutcomeUnknown, so that no caller takes a
	// lookup's "not found" for final.
	CreateTask(ctx context.Context, t *Task, p CreateParams) (balance int64, err error)

	// Task returns the owner's task, or ErrTaskNotFound when it does not
	// exist, has expired, or belongs to another owner.
	Task(ctx context.Context, owner, id string) (*Task, error)

	// QueuePositions returns, for each id, how many pending tasks (of
	// any owner) are ahead of it in the fair-share claim order (by
	// Tag, see docs/scheduling.md), or -1 when the task is not pending
	// (or does not exist). Tasks whose retry delay has not run out, and
	// tasks a cap holds back, count where their tag puts them, so this
	// is an estimate: owners who submit later may still go first.
	QueuePositions(ctx context.Context, ids []string) ([]int, error)

	// ClaimTask is ClaimTasks of one task with no caps: it moves the
	// next ready pending task in fair-share order to processing,
	// increments its Attempt (the fencing token) and leases it for
	// lease. The first claim sets StartedAt. It returns ErrNoTask when
	// none is ready. A task it returns with an error (as ClaimTasks
	// returns tasks with one) is claimed: the caller runs it.
	//
	// An attempt holds its task from its claim until the task leaves
	// processing (it finishes, is retried, released or cancelled) or
	// RecoverExpired takes it back. A lease that has run out does not
	// by itself end the hold: until RecoverExpired acts on the task, its
	// attempt may still finish, fail, retry, release or report progress,
	// and its work is kept, since no other attempt can have it yet. It
	// may not renew the lease: the task stopped counting against the
	// caps when its lease ended, and another task may have taken its
	// slot, so a renewal would put the owner or the model over its cap
	// (RenewLease). The calls below answer ErrLeaseLost only to an
	// attempt that no longer holds the task, and RenewLease to one
	// whose lease has ended too.
	ClaimTask(ctx context.Context, lease time.Duration) (*Task, error)

	// ClaimTasks claims up to p.N ready tasks in one atomic step, each as
	// ClaimTask would, in fair-share order across owners (lowest Tag
	// first; one owner's tasks oldest first), passing over the tasks that
	// p.Limits holds back now: those stay pending, with no attempt
	// counted. Each model's pending tasks are a queue of their own,
	// merged in that order: a model that may not start now (paused, at
	// its cap, waiting for its rate) is passed over without reading its
	// tasks, and in each model's queue the claim passes over at most
	// ClaimScan tasks (not ready, or the first of an owner at its cap:
	// an owner at its cap counts once, its further tasks are passed over
	// uncounted) beyond the ones it takes. Retries waiting out their
	// delay are not among them: the claim sets aside those it meets (a
	// bounded number a claim) and puts them back at their tags' places
	// once due, so that they hold back none of their model's other tasks
	// (storetest's DelayedRetriesHoldNoOneBack). So its cost is bounded by the
	// batch, ClaimScan for each model with pending tasks and the pending
	// tasks of the owners at their cap, whatever the queue's length; a
	// held model's backlog holds back no other model's tasks, and an
	// owner at its cap no other owner's.
	// Caps count running tasks across every process on the store: a
	// task counts from its claim until it leaves processing (finish,
	// fail, retry, release, cancel) or its lease ends, whichever is
	// first. Each start of a model with a rate pushes the model's next
	// allowed start 1/rate later. It returns ErrNoTask when it claims
	// nothing.
	//
	// A task it claimed but cannot read back (stored data that does not
	// decode) must not cost the others their claim: it returns the
	// tasks it could read with an *UnreadableTasksError naming the
	// others, which it fails (CodeInternal) and refunds at once where it
	// can (storekit.FailUnreadable). A store spread over several parts
	// (a sharded Redis store), whose claim asks one part after another,
	// must not drop the tasks of the parts that gave them when a later
	// part fails, nor drop that part's error: it returns the tasks with
	// a *PartialClaimError. The two may come together (errors.Join).
	// The tasks returned with either error are claimed: the caller runs
	// them, and reports the error. Any other error comes with no task.
	ClaimTasks(ctx context.Context, p ClaimParams) ([]*Task, error)

	// RenewLease extends the lease of attempt to now+lease while it
	// runs. ErrLeaseLost (and nothing changes) when attempt no longer
	// holds the task, or when its lease has ended (now is at or past
	// LeaseUntil), even before RecoverExpired has taken the task back:
	// the task stopped counting against the caps at that instant, and a
	// renewal that revived it could put its owner or model one over
	// the cap. The attempt may still store an outcome (see ClaimTask);
	// the Service's worker stops the generation, as on any lost lease,
	// and leaves the task to RecoverExpired unless the generation had
	// already ended.
	RenewLease(ctx context.Context, id string, attempt int, lease time.Duration) error

	// CompleteTask stores the images' records and moves the task to
	// success; the records expire with the task. The caller has already
	// put their bytes in Blobs() (bytes first, so a crash leaves at most
	// an orphan blob, never a record without bytes). The store sets each
	// record's CreatedAt and ExpiresAt, and keeps every other field as
	// given. seed, when not nil, becomes the task's seed
	// (Task.Request.Seed): the one the model reports it used, when that
	// is not the one it was given; nil keeps the task's. ErrLeaseLost
	// when attempt no longer holds the task (and nothing changes).
	CompleteTask(ctx context.Context, id string, attempt int, images []Image, seed *int64) error

	// FailTask moves the task to failed with f as its error and refunds
	// its cost exactly once. It returns the credits it gave back: the
	// cost, or 0 when the task had been refunded before (an operator's
	// free retry). ErrLeaseLost when attempt no longer holds the task.
	FailTask(ctx context.Context, id string, attempt int, f Failure) (refund int64, err error)

	// SetProgress records how far attempt's generation has come (0 to
	// 1) on the task, as Task.Progress; ClaimTask resets it to 0. It
	// changes nothing else (not UpdatedAt). ErrLeaseLost when attempt no
	// longer holds the task. The service writes it at most once every
	// ProgressInterval for a running task.
	SetProgress(ctx context.Context, id string, attempt int, progress float64) error

	// RetryTask gives the task back to the queue (processing -> pending),
	// ready again after delay; lastErr is kept for operators.
	// ErrLeaseLost when attempt no longer holds the task.
	RetryTask(ctx context.Context, id string, attempt int, delay time.Duration, lastErr string) error

	// ReleaseTask gives the task back to the queue, ready at once, when
	// its worker shuts down before the attempt ended: the task's
	// Released count grows by one, so this claim does not count against
	// maxAttempts (RecoverExpired, Config.MaxAttempts). ErrLeaseLost when
	// attempt no longer holds the task.
	ReleaseTask(ctx context.Context, id string, attempt int) error

	// CancelTask fails owner's pending or processing task (CodeCancelled,
	// CancelledMessage) and refunds it, unless p.KeepStartedCharge and
	// the task is processing: then its charge is kept (no refund, no
	// ledger entry; Task.Refunded stays false). The status it decides on
	// is the one it changes, in one step. A processing task's lease ends
	// with it, so its worker can change nothing more. ErrTaskNotFound for
	// no such task of owner, ErrInvalidTransition when it has finished.
	// It returns the credits it gave back, as FailTask does (0 when the
	// charge is kept).
	CancelTask(ctx context.Context, owner, id string, p CancelParams) (refund int64, err error)

	// RecoverExpired sends tasks whose lease has ended back to pending, or
	// fails them (CodeInternal, storekit.ExpiredLeaseMessage) and refunds them, as
	// FailTask would, when they have had maxAttempts attempts (Attempt -
	// Released: released claims do not count). It reports how many tasks
	// it requeued and each task it failed, so that the caller can count
	// and log the failures; on an error, what it reports was done.
	RecoverExpired(ctx context.Context, maxAttempts int) (Recovery, error)
}

// SchedulerStore keeps what fair share and the caps need beyond the
// tasks themselves: owners' weights and models' pauses, shared by every
// process on the store (docs/scheduling.md).
type SchedulerStore interface {
	// SetOwnerWeight sets owner's share of the workers when several
	// owners have ready tasks: an owner of weight 3 gets three turns for
	// every one of an owner of weight 1. It applies to tasks queued from
	// now on. weight must be within 1..MaxOwnerWeight
	// (storekit.ErrInvalidStoreInput otherwise).
	SetOwnerWeight(ctx context.Context, owner string, weight int) error
	// OwnerWeight returns owner's weight (1 unless set).
	OwnerWeight(ctx context.Context, owner string) (int, error)
	// PauseModel holds back every start of model until d from now (by
	// the store's clock), for every claimer: a provider said 429 with a
	// Retry-After. A pause never shortens one already in force.
	PauseModel(ctx context.Context, model string, d time.Duration) error
	// SchedulerStats reports, for operators and metrics, which ready
	// tasks l holds back now (among the first SchedulerScan pending
	// tasks in claim order: an estimate on a longer queue) and the
	// owners with the most pending tasks.
	SchedulerStats(ctx context.Context, l Limits) (SchedulerStats, error)
}

// MaxOwnerWeight is the largest weight an owner may have.
const MaxOwnerWeight = 1000

// TagStride is how far one task of an owner of weight 1 moves its
// owner's tag (docs/scheduling.md); weight w moves it TagStride/w.
const TagStride = 1000

// SchedulerScan is how many pending tasks SchedulerStats looks at.
const SchedulerScan = 1000

// SchedulerStats is the state of the scheduler (Store.SchedulerStats).
type SchedulerStats struct {
	// Held counts the ready tasks held back now, by reason.
	Held map[HoldReason]int
	// Busiest are the owners with the most pending tasks, most first
	// (at most BusiestOwners).
	Busiest []OwnerLoad
	// Paused lists the models whose starts are paused, with when the
	// pause ends.
	Paused map[string]time.Time
}

// BusiestOwners is how many owners SchedulerStats.Busiest lists.
const BusiestOwners = 10

// OwnerLoad is one owner's share of the queue.
type OwnerLoad struct {
	Owner   string
	Pending int // pending tasks (counted among the first SchedulerScan on a longer queue)
	Running int // processing tasks whose lease has not ended
}

// ClaimScan is how many pending tasks of one model's queue a claim may
// pass over (not ready yet, or the first of an owner held back by its
// cap: the owner's further tasks are passed over uncounted) beyond the
// ones it takes; a model held back as a whole (paused, at its cap,
// waiting for its rate) is passed over without counting its tasks.
const ClaimScan = 256

// CreateParams are the rules of one CreateTask.
type CreateParams struct {
	// MaxPending refuses the task (ErrQueueFull) when its owner already
	// has this many pending tasks; 0 is no limit.
	MaxPending int
}

// CancelParams are the rules of one CancelTask.
type CancelParams struct {
	// KeepStartedCharge keeps the charge of a task a worker had claimed
	// (processing): its generation had begun, and a provider may bill
	// for it. A pending task (one never claimed, one sent back to
	// pending after a lost lease or a release, or one waiting for a
	// delayed retry) is refunded either way.
	KeepStartedCharge bool
}

// ClaimParams are the arguments of one ClaimTasks.
type ClaimParams struct {
	Lease time.Duration // how long the claimed tasks are leased
	N     int           // how many tasks at most (at least 1 is asked for)
	// Limits holds back tasks that may not start now.
	Limits Limits
}

// Limits are the caps and rates a claim enforces. Every process that
// claims from one store should use the same Limits; each claim enforces
// the ones it is given against the running counts and start times kept
// in the store, shared by all.
type Limits struct {
	// OwnerConcurrency is how many tasks one owner may have running at
	// once; 0 is no cap.
	OwnerConcurrency int
	// ModelConcurrency caps the running generations of each named model
	// (Task.Model); a model not named, or named with 0, has no cap.
	ModelConcurrency map[string]int
	// ModelRate is how many generations of each named model may start
	// per minute; the starts are spread evenly, one every minute/rate,
	// so no minute ever sees more. A model not named, or named with 0,
	// has no rate.
	ModelRate map[string]int
}

// Zero reports whether l holds nothing back.
func (l Limits) Zero() bool {
	return l.OwnerConcurrency == 0 && len(l.ModelConcurrency) == 0 && len(l.ModelRate) == 0
}

// HoldReason says why a ready task may not start now.
type HoldReason string

// The reasons a claim passes over a ready task (metrics label values).
const (
	HeldOwnerCap  HoldReason = "owner_cap"  // its owner runs Limits.OwnerConcurrency tasks
	HeldModelCap  HoldReason = "model_cap"  // its model runs Limits.ModelConcurrency generations
	HeldModelRate HoldReason = "model_rate" // its model's rate, or a pause after a provider's 429
)

// HoldReasons lists every HoldReason, in a fixed order.
func HoldReasons() []HoldReason { return []HoldReason{HeldOwnerCap, HeldModelCap, HeldModelRate} }

// Recovery is what one Store.RecoverExpired call did.
type Recovery struct {
	// Requeued counts the tasks sent back to pending.
	Requeued int
	// Failed lists the tasks failed because their lease expired on their
	// last allowed attempt, in no particular order.
	Failed []ExpiredTask
}

// Moved is how many tasks the recovery moved: requeued and failed.
func (r Recovery) Moved() int { return r.Requeued + len(r.Failed) }

// ExpiredTask is a task that RecoverExpired failed: what the service
// needs to count it (Observer.TaskFinished, Observer.CreditsRefunded)
// and to log it.
type ExpiredTask struct {
	ID        string
	Owner     string
	Model     string
	RequestID string // the submitting request's id (Task.RequestID); "" if none
	Attempts  int    // the attempts it had, released claims not counted
	Cost      int64  // the credits charged for it
	// Refund is how many credits the failure gave back: Cost, or 0 when
	// the task had been refunded before (an operator's free retry,
	// Inspector.Retry without recharge).
	Refund int64
}

// ImageStore keeps the records of images; their bytes are in Blobs().
type ImageStore interface {
	// Image returns an image's record, or ErrImageNotFound when it does
	// not exist or has expired.
	Image(ctx context.Context, id string) (*Image, error)
	// Blobs is the BlobStore that keeps the bytes of this store's images
	// (each backend has a default; its Config.Blobs replaces it).
	Blobs() BlobStore
}

// LedgerKind says what a ledger entry is for.
type LedgerKind string

// Ledger entry kinds.
const (
	LedgerGrant  LedgerKind = "grant"  // credits added by the operator or host app
	LedgerCharge LedgerKind = "charge" // a task's price, debited at submit
	LedgerRefund LedgerKind = "refund" // a failed task's price, given back
	LedgerWeb    LedgerKind = "web"    // web use charged by the host app
)

// LedgerEntry is one append-only change to a balance.
type LedgerEntry struct {
	// ID is set by the store: unique within the owner's ledger (in this
	// module's backends, the entry's sequence number: 1, 2, 3...).
	ID     string
	Owner  string
	Kind   LedgerKind
	Amount int64  // positive adds credits, negative takes them
	Ref    string // unique per owner: "task:<id>", "refund:<id>", an idempotency key
	At     time.Time
	// BalanceAfter is the balance once this entry applied (set by the store).
	BalanceAfter int64
}

// LedgerPage is one page of an owner's ledger, newest first.
type LedgerPage struct {
	Entries []LedgerEntry
	// Next is the cursor of the following page, "" on the last page.
	Next string
}

// CreditStore is the append-only credit ledger. The balance is the sum of
// the owner's entries and never goes below zero.
type CreditStore interface {
	// AddEntry appends e (At is set by the store) and returns the new
	// balance. A negative entry that would make the balance negative
	// returns ErrInsufficientCredits; an entry whose Ref the owner already
	// used returns ErrDuplicateEntry and the current balance. Neither
	// changes anything.
	AddEntry(ctx context.Context, e LedgerEntry) (balance int64, err error)
	// Balance returns the owner's balance (0 for an unknown owner).
	Balance(ctx context.Context, owner string) (int64, error)
	// Ledger returns the owner's entries, oldest first.
	Ledger(ctx context.Context, owner string) ([]LedgerEntry, error)
	// ListLedger returns up to limit of the owner's entries, newest
	// first, starting after cursor ("" for the first page; otherwise a
	// Next of an earlier page). A cursor the store did not make is
	// ErrInvalidParams.
	ListLedger(ctx context.Context, owner string, limit int, cursor string) (LedgerPage, error)
}

// APIKey is a stored API key. Only its SHA-256 hash is kept.
type APIKey struct {
	ID        string
	Owner     string
	Hash      string // hex SHA-256 of the key
	Hint      string // the first characters, to tell keys apart in a list
	Name      string // optional label the owner chose ("laptop", "CI"); may be empty
	CreatedAt time.Time
	Revoked   bool
	// LastUsedAt is when the key last authenticated a request, to within
	// KeyUseGranularity; zero when it never has. The store sets it
	// (TouchKey).
	LastUsedAt time.Time
}

// KeyUseGranularity is how precisely a key's last use is recorded: the
// service records a use only when the recorded one is at least this old,
// so a key in constant use costs one store write a minute, not one per
// request, and LastUsedAt may lag the true last use by up to this much.
const KeyUseGranularity = time.Minute

// KeyStore keeps API keys by hash.
type KeyStore interface {
	// PutKey stores a new key.
	PutKey(ctx context.Context, k APIKey) error
	// KeyByHash returns the key with the given hash, or ErrKeyNotFound
	// when none exists or it is revoked.
	KeyByHash(ctx context.Context, hash string) (*APIKey, error)
	// Keys lists the owner's keys, revoked ones included.
	Keys(ctx context.Context, owner string) ([]APIKey, error)
	// TouchKey records that the key with the given hash was used now (by
	// the store's clock), unless its LastUsedAt is already less than
	// KeyUseGranularity old, in which case it changes nothing: concurrent
	// touches by many processes write at most once a minute. It returns
	// ErrKeyNotFound when no key has the hash. Service.Authenticate calls
	// it only when the LastUsedAt it just read is stale, so the hot path
	// of every request stays a single read.
	TouchKey(ctx context.Context, hash string) error
	// RevokeKey revokes the owner's key with the given id, or returns
	// ErrKeyNotFound.
	RevokeKey(ctx context.Context, owner, id string) error
	// DeleteKey deletes the owner's revoked key with the given id, or
	// returns ErrKeyNotFound (also for a key that is not revoked: a live
	// key is never deleted). Service.RevokeKey calls it to keep at most
	// Config.RevokedKeysKept revoked keys an owner.
	DeleteKey(ctx context.Context, owner, id string) error
}

// IdempotencyRecord is what a store keeps for one idempotency key.
// The store keeps it as given; Service.SubmitIdempotent writes and reads
// it (Status 201 with the submission, as JSON in Body; earlier versions
// also wrote 422 with the refusal of the request, which it still reads).
type IdempotencyRecord struct {
	Fingerprint string // identifies the request (a hash of its body)
	Done        bool   // false while the first request is in flight
	Status      int    // the first request's outcome, once Done
	Body        []byte // the first request's answer, once Done
	// TaskID is the id of the task the request in flight asks the
	// store to make (BeginIdempotent's taskID); "" in a record written
	// without one (by an earlier version of a store).
	TaskID string
	// Expired: the record was in flight and its time ran out before its
	// request was settled; BeginIdempotent renewed it, as it was, for
	// the caller to settle (see BeginIdempotent).
	Expired bool
}

// IdempotencyStore keeps idempotency keys of submit requests, per owner,
// so that a retried request is answered with the first one's answer
// (Service.SubmitIdempotent).
type IdempotencyStore interface {
	// BeginIdempotent records that the request with owner's key and
	// fingerprint, which will ask the store to make the task taskID,
	// is in flight, for at most inFlight, and returns nil. If the key
	// holds a live record (in flight, or finished within its ttl), it
	// changes nothing and returns the record (which may hold another
	// fingerprint).
	//
	// An in-flight record whose time ran out is kept until ttl (at
	// least inFlight) after it began: its request's outcome may be
	// unknown (its task may exist, or still come to exist). While it is
	// kept, a record that holds a TaskID is not taken over: the call
	// renews it for inFlight as it is (its fingerprint and TaskID; the
	// taskID given now is not used) and returns it with Expired set.
	// The caller settles it under its fingerprint: it finishes it
	// (FinishIdempotent) when its task exists, or submits that task
	// again, or abandons the record (AbandonIdempotent). A record with
	// no TaskID (taskID "", or written by an earlier version) is taken
	// over once its time has run out, as any record that is gone.
	BeginIdempotent(ctx context.Context, owner, key, fingerprint, taskID string, inFlight, ttl time.Duration) (*IdempotencyRecord, error)
	// FinishIdempotent stores the response of the request in flight with
	// this fingerprint and keeps it for ttl. If the key holds no such
	// record (it expired, or a later request took the key, or it is
	// already finished) it changes nothing and returns nil.
	FinishIdempotent(ctx context.Context, owner, key, fingerprint string, status int, body []byte, ttl time.Duration) error
	// AbandonIdempotent forgets the key (the request failed in a way a
	// retry may fix), so the next request with it runs afresh. Like
	// FinishIdempotent it only removes the in-flight record with this
	// fingerprint, and otherwise changes nothing.
	AbandonIdempotent(ctx context.Context, owner, key, fingerprint string) error
}

// TaskPage is one page of an owner's tasks, newest first.
type TaskPage struct {
	Tasks []*Task
	// Next is the cursor of the following page, "" on the last page.
	Next string
}

// TaskLister lists an owner's tasks.
type TaskLister interface {
	// ListTasks returns up to limit of owner's tasks, newest first,
	// starting after cursor ("" for the first page), only those with the
	// given status when status is not "". Expired tasks are not listed.
	ListTasks(ctx context.Context, owner string, status Status, limit int, cursor string) (TaskPage, error)
}

// TaskWatcher announces when a task finishes, so that waiting for a
// result (and stopping a cancelled generation) needs no polling. On a
// shared backend it works across processes.
type TaskWatcher interface {
	// WatchTask returns a channel that is closed once task id reaches
	// success or failed (or may be closed spuriously; callers re-read the
	// task). stop releases the watch; call it when done waiting.
	WatchTask(ctx context.Context, id string) (finished <-chan struct{}, stop func(), err error)
}

// WebhookDelivery is a task event whose callback is due.
type WebhookDelivery struct {
	// ID names the delivery in AckWebhook, RetryWebhook and
	// PostponeWebhook; callers treat it as opaque. A store may hand out
	// the plain storekit.WebhookID(TaskID, Event), or (as this module's
	// stores do) an ID naming this claim: storekit.ClaimedWebhookID of
	// it and the lease end the claim set, so that what a stale attempt
	// reports cannot touch the delivery a later ending of the task
	// queued under the same WebhookID (see WebhookStore).
	ID       string
	TaskID   string
	Event    CallbackEvent // completed, or processing
	Owner    string
	URL      string // the task's callback_url
	Attempts int    // attempts made before this one
}

// WebhookStore keeps the callbacks of task events until they are
// delivered. The store queues a delivery in the same atomic step as the
// event, for a task with a callback_url whose callback_events ask for
// it (Wants): completed when the task finishes, processing when a
// worker first claims it. So no callback is lost to a crash; deliveries
// are leased like tasks, so one dispatcher at a time sends each.
//
// A task has at most one delivery per event, under
// storekit.WebhookID(task, event), but it may end more than once: a
// failed task requeued by an operator (OperatorStore.RequeueTask)
// ends again. RequeueTask drops the task's queued deliveries, so its
// next ending queues a fresh one (due then, no attempts counted) under
// the same WebhookID while an attempt at the old one may still be in
// flight. So that attempt's outcome cannot act on the new delivery, a
// store should hand out claimed IDs (storekit.ClaimedWebhookID: the
// WebhookID and the lease end the claim set, in the store's unit of due
// time): AckWebhook, RetryWebhook and PostponeWebhook given one act only
// while the delivery is still leased by that claim (its due time is that
// lease end), and otherwise do nothing and return nil (the delivery was
// queued again by a later ending, or claimed by another dispatcher after
// the lease ran out). Given a plain WebhookID they act on the delivery
// whatever its state. A store that hands out plain IDs remains correct
// apart from that race (which storetest's WebhookStaleClaimChangesNothing
// case checks, and so fails on it).
type WebhookStore interface {
	// ClaimWebhooks leases up to n due deliveries, in due-time order
	// (the longest due first): they are not due again until lease has
	// passed (unless acknowledged or retried).
	ClaimWebhooks(ctx context.Context, lease time.Duration, n int) ([]WebhookDelivery, error)
	// AckWebhook removes the delivery with this ID
	// (WebhookDelivery.ID): it was delivered, or given up. A claimed ID
	// whose claim no longer leases the delivery removes nothing.
	AckWebhook(ctx context.Context, id string) error
	// RetryWebhook counts a failed attempt of the delivery with this ID
	// and makes it due again after delay (nothing for a claimed ID whose
	// claim no longer leases it).
	RetryWebhook(ctx context.Context, id string, delay time.Duration) error
	// PostponeWebhook makes the delivery with this ID due again after
	// delay without counting an attempt: a dispatcher gives back what it
	// claimed but may not send yet (nothing for a claimed ID whose claim
	// no longer leases it). An unknown ID is not an error.
	PostponeWebhook(ctx context.Context, id string, delay time.Duration) error
}

// SecretStore keeps named secrets shared by every process on the store.
type SecretStore interface {
	// SharedSecret returns the secret stored under name, first storing
	// the one generate makes if there is none.
	SharedSecret(ctx context.Context, name string, generate func() []byte) ([]byte, error)
	// ReplaceSharedSecret stores next under name if the secret stored
	// there is old (byte for byte), and reports whether it did: a
	// compare-and-swap in one atomic step, so that of several
	// replacements of the same secret at once exactly one wins and the
	// others change nothing. A name with no secret is not replaced.
	ReplaceSharedSecret(ctx context.Context, name string, old, next []byte) (bool, error)
}

// Session is a signed-in session of the web console (package console),
// kept in the store so that ending it takes effect in every process at
// once.
type Session struct {
	// ID names the session. The console stores a hash of the token its
	// cookie carries, never the token itself.
	ID    string
	Owner string
	// KeyID is the API key the session was opened with ("" for none).
	KeyID string
	// CreatedAt and ExpiresAt are set by the store, by its clock.
	CreatedAt time.Time
	ExpiresAt time.Time
}

// MaxSessionsPerOwner bounds an owner's live console sessions: each
// sign-in makes one, which lives for hours, so without a bound a user
// signing in again and again (with each of their keys, at its rate
// limit) would keep a hundred thousand of them in the store.
const MaxSessionsPerOwner = 100

// SessionStore keeps console sessions until they expire or are ended.
type SessionStore interface {
	// PutSession stores s (ID and Owner required) and returns it as
	// stored: live for ttl from now, by the store's clock, which sets
	// CreatedAt and ExpiresAt. A session with s.ID already stored is
	// replaced. An owner keeps at most MaxSessionsPerOwner sessions:
	// past it, those of its other sessions that expire first are ended.
	PutSession(ctx context.Context, s Session, ttl time.Duration) (Session, error)
	// Session returns the live session with the given id, or
	// ErrSessionNotFound when there is none: never stored, expired, or
	// ended.
	Session(ctx context.Context, id string) (*Session, error)
	// EndSession ends owner's session id (sign-out). A session that is
	// not live, or is another owner's, is left alone; that is not an
	// error.
	EndSession(ctx context.Context, owner, id string) error
	// EndSessions ends every session of owner (sign out everywhere) and
	// returns how many were live.
	EndSessions(ctx context.Context, owner string) (int, error)
}

// QueueStats is the state of the work queue, for metrics and operators.
type QueueStats struct {
	Pending    int64 // pending tasks, ready or waiting out a retry delay
	Processing int64 // tasks leased to a worker
	// OldestPending is how long the oldest ready pending task has waited
	// since it became ready (submitted, or its retry delay ended); 0
	// when no task is ready.
	OldestPending time.Duration
}

// TaskFilter selects tasks across owners for operators. Zero fields
// match everything.
type TaskFilter struct {
	Owner  string
	Status Status
	Since  time.Time // created at or after
	Until  time.Time // created before
}

// OperatorStore is what operators' tools (health checks, metrics, the
// inspector) read and change across owners. None of it is on a hot path
// of the API, but QueueStats and Ping run on every scrape or probe and
// must stay cheap (counts, not scans).
type OperatorStore interface {
	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	// QueueStats counts pending and processing tasks and measures the
	// wait of the oldest ready one.
	QueueStats(ctx context.Context) (QueueStats, error)
	// TaskByID returns any owner's task, or ErrTaskNotFound.
	TaskByID(ctx context.Context, id string) (*Task, error)
	// ListAllTasks returns up to limit tasks matching f, of every owner
	// unless f.Owner is set, newest first, after cursor ("" for the
	// first page; a bad cursor wraps ErrInvalidParams). A page may be
	// short (even empty) with a Next cursor when the filter matches
	// little; keep paging until Next is "".
	ListAllTasks(ctx context.Context, f TaskFilter, limit int, cursor string) (TaskPage, error)
	// RequeueTask gives a failed task back to the queue, ready now, with
	// its error cleared (its Attempt, the fencing token, keeps counting).
	// With recharge its cost is debited again (ledger reference
	// RechargeRef(id, attempt); ErrInsufficientCredits and no change when
	// the balance is short) and a later failure refunds it again (ledger
	// reference RerefundRef(id, attempt)); without, it runs free and a
	// later failure refunds nothing. A recharge whose reference is
	// already used (the task was recharged at this attempt and failed
	// again before a claim, cancelled while pending) is
	// ErrDuplicateEntry, and changes nothing. So is a recharge of a task
	// that was not refunded (Task.Refunded false: its owner's cancel kept
	// its started charge, CancelParams.KeepStartedCharge), which would
	// give it a second charge outstanding: the store decides it in the
	// same atomic step as the requeue, on the task as it is then, since a
	// caller's earlier read can be outrun (another operator's recharge, a
	// claim and such a cancel in between). A requeue without a recharge
	// is allowed either way. Its callback deliveries still
	// queued (either event) are dropped, so that its next ending queues
	// its own (see WebhookStore). ErrTaskNotFound for no such task,
	// ErrInvalidTransition when it is not failed.
	RequeueTask(ctx context.Context, id string, recharge bool) error
	// PurgeExpired removes at once what retention has made invisible
	// (finished tasks past ExpiresAt, their images, index entries of
	// removed tasks) and returns how many tasks it removed or unindexed.
	PurgeExpired(ctx context.Context) (int, error)
	// AddProviderStats adds st's counts to the bucket of the current
	// minute (ProviderStatsBucket, by the store's clock), where every
	// process's counts add up; entries that st repeats add up too. It is
	// one round trip (Redis: two, the first reading the server's time)
	// and writes nothing for an empty st. Buckets are dropped once
	// ProviderStatsRetention has passed. Workers call it every
	// ProviderStatsFlushInterval, never per generation
	// (Service.FlushProviderStats).
	AddProviderStats(ctx context.Context, st ProviderStats) error
	// ProviderStats returns the sums of the buckets of the last window,
	// by the store's clock and to the minute: the bucket that holds
	// now-window and every later one (window at most
	// ProviderStatsRetention; 0 means the current minute). The entries
	// may come in any order, without zero counts.
	ProviderStats(ctx context.Context, window time.Duration) (ProviderStats, error)
}
