package storetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// randomSeeds and randomSteps bound RandomOperationsAgreeWithModel: each
// seed is a run of randomSteps operations on the one store, under owner
// and model names of its own, drained at its end. IMAGEGEN_TEST_SEEDS
// replaces the seeds: a number N runs seeds 1..N (to hunt for a
// disagreement), "first-last" runs seeds first..last. With
// IMAGEGEN_TEST_TRACE set, each seed logs the tasks its claims took (by
// creation index; -1 ends a claim, -2 marks a recovery that requeued
// several tasks, whose order the docs leave open), to compare stores.
// A seed's run is the same on every run of a store, but for the memory
// store after such a recovery (it requeues them in map order).
var randomSeeds = []uint64{1, 2, 3, 4, 12} // 12 recharges a task twice at one attempt

// seeds returns the seeds to run: randomSeeds unless IMAGEGEN_TEST_SEEDS
// says others.
func seeds(t *testing.T) []uint64 {
	v := os.Getenv("IMAGEGEN_TEST_SEEDS")
	if v == "" {
		return randomSeeds
	}
	first, last := "1", v
	if a, b, ok := strings.Cut(v, "-"); ok {
		first, last = a, b
	}
	lo, err1 := strconv.ParseUint(first, 10, 64)
	hi, err2 := strconv.ParseUint(last, 10, 64)
	if err1 != nil || err2 != nil || lo > hi {
		t.Fatalf("IMAGEGEN_TEST_SEEDS=%q: want N or FIRST-LAST", v)
	}
	var out []uint64
	for s := lo; s <= hi; s++ {
		out = append(out, s)
	}
	return out
}

const randomSteps = 200

// testRandomOperations applies seeded random sequences of task, queue
// and ledger operations through imagegen.Store and, after each, checks
// the store against a small reference model of the documented rules
// (store.go, docs/scheduling.md):
//
//   - grants, web charges (refused when short) and repeated references
//     (ErrDuplicateEntry): balances, ledger entries, BalanceAfter,
//     ListLedger pages;
//   - CreateTask with costs 1 to 3 on balances that run short and with
//     pending caps (ErrInsufficientCredits, ErrQueueFull, nothing
//     changed);
//   - ClaimTask and ClaimTasks of 1 to 4, with no limits, owner caps,
//     model caps, one model's start rate (odd seeds) and model pauses:
//     exactly which tasks each claim takes, in what order;
//   - complete (with images and a seed), fail, retry with a delay,
//     release, renew, progress, cancel (by the owner or another), stale
//     attempts (ErrLeaseLost), lease expiry by Harness.Advance and
//     RecoverExpired with 1 to 3 attempts allowed, operators' requeues
//     with and without a recharge (refused for a task whose charge a
//     cancel kept): each task's state, refunds exactly once, who may
//     see the task;
//   - QueueStats, QueuePositions, SchedulerStats, ListTasks,
//     ListAllTasks, TaskByID.
//
// Fair share across owners is checked through QueuePositions: the
// positions of the pending tasks must be 0..P-1, each owner's in the
// order it queued them, and every claim must take, in that order, the
// ready tasks its limits let start. The tags themselves are not
// modelled: the virtual time they start from differs by backend
// (docs/scheduling.md). Where the docs leave the outcome open (an
// attempt whose lease ran out but was not yet recovered; which of two
// refusals comes first) either is taken and the model follows the
// store. Webhook deliveries are modelled too: queued on a task's first
// claim and its endings as its callback asks, dropped by a requeue,
// claimed, acked, retried and postponed under claimed IDs (stale ones
// changing nothing) and plain ones. Idempotency keys, API keys,
// sessions, watches and retention are left to their own cases.
func testRandomOperations(t *testing.T, h Harness) {
	for i, seed := range seeds(t) {
		t.Logf("seed %d", seed)
		m := newRefModel(t, h, seed, fmt.Sprintf("r%d", i))
		for step := range randomSteps {
			m.step = step
			m.randomStep()
			if t.Failed() {
				t.Fatalf("seed %d: the store disagreed with the model at step %d (operation %s)", seed, step, m.lastOp)
			}
			if step%25 == 24 {
				m.checkAll()
			}
		}
		m.drain()
		m.checkAll()
		if t.Failed() {
			t.Fatalf("seed %d: the store disagreed with the model at its end", seed)
		}
	}
}

// rmTask is the model's view of one task.
type rmTask struct {
	id, owner, model string
	cost             int64
	status           imagegen.Status
	attempt          int
	released         int
	leaseUntil       time.Duration // model time, while processing
	runAfter         time.Duration // model time, while pending
	// line orders the owner's pending tasks: each queueing takes the
	// next number, and the tasks one RecoverExpired requeues share one
	// (the docs give no order among them).
	line        int
	outstanding bool   // its current charge has not been refunded
	refundRef   string // the reference its next refund uses
	code        imagegen.ErrorCode
	images      []string
	requeued    bool    // an operator gave it back at least once
	progress    float64 // the current attempt's, while processing
	seed        *int64  // Request.Seed: none at submit, a finish may set it
	url         string  // Request.CallbackURL, "" for none
	events      []imagegen.CallbackEvent
}

// rmHook is a queued webhook delivery; rmClaim one claim of it, whose
// ID acts only while the delivery's due time is that claim's lease end
// (WebhookStore).
type rmHook struct {
	taskID, owner, url string
	event              imagegen.CallbackEvent
	due                time.Duration
	attempts           int
}

type rmClaim struct {
	id, hook string
	leaseEnd time.Duration
}

type rmEntry struct {
	ref    string
	kind   imagegen.LedgerKind
	amount int64
}

type refModel struct {
	t      *testing.T
	h      Harness
	s      imagegen.Store
	rng    *rand.Rand
	prefix string
	step   int
	lastOp string
	cur    string // the operation's name

	now      time.Duration // time advanced since the seed began
	owners   []string
	models   []string
	balances map[string]int64
	ledger   map[string][]rmEntry
	refs     map[string]map[string]bool // owner → refs used
	tasks    map[string]*rmTask
	order    []string                 // task ids, in creation order
	paused   map[string]time.Duration // model → model time its pause ends
	line     int
	refSeq   int
	// rate, in a seed that has one, is the starts a minute of models[1]
	// that every claim of the seed enforces (so that every start of the
	// model pushes its next allowed start, which is then known);
	// nextStart is when the model may start next.
	rate      int
	nextStart time.Duration
	trace     []int
	// base is the store's time at the seed's start (model time 0), read
	// from its first task's CreatedAt; zero until then.
	base   time.Time
	hooks  map[string]*rmHook // by WebhookID
	claims []rmClaim          // the delivery IDs handed out, for acks and stale ones
	// lateOutcomes counts, for the report, what the store answered an
	// attempt whose lease ran out before it was recovered.
	lateOutcomes map[string]int
	// seen counts outcomes, logged to show what a seed exercised.
	seen map[string]int
}

func newRefModel(t *testing.T, h Harness, seed uint64, prefix string) *refModel {
	m := &refModel{
		t: t, h: h, s: h.Store,
		rng:          rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		prefix:       prefix,
		owners:       []string{prefix + "-a", prefix + "-b", prefix + "-c"},
		models:       []string{prefix + "-m1", prefix + "-m2"},
		balances:     map[string]int64{},
		ledger:       map[string][]rmEntry{},
		refs:         map[string]map[string]bool{},
		tasks:        map[string]*rmTask{},
		paused:       map[string]time.Duration{},
		lateOutcomes: map[string]int{},
		seen:         map[string]int{},
		hooks:        map[string]*rmHook{},
	}
	for _, o := range m.owners {
		m.refs[o] = map[string]bool{}
	}
	// A sharded store keeps a model's rate within each shard, as its
	// caps (Harness.Sharded): no rate there.
	if seed%2 == 1 && !h.Sharded {
		m.rate = pick(m.rng, []int{20, 60}) // one start every 3 s, or every second
	}
	t.Cleanup(func() {
		t.Logf("seed %d exercised: %v", seed, m.seen)
		if len(m.trace) > 0 {
			t.Logf("seed %d claims: %v", seed, m.trace)
		}
		if len(m.lateOutcomes) > 0 {
			t.Logf("seed %d: answers to attempts whose lease had run out, not yet recovered: %v", seed, m.lateOutcomes)
		}
	})
	return m
}

// note counts an outcome of the current operation.
func (m *refModel) note(outcome string) { m.seen[m.cur+": "+outcome]++ }

func (m *refModel) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("step %d (%s): "+format, append([]any{m.step, m.lastOp}, args...)...)
}

// pick returns a random element of xs.
func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func (m *refModel) owner() string { return pick(m.rng, m.owners) }

// tasksWhere lists the model's tasks matching ok, in creation order.
func (m *refModel) tasksWhere(ok func(*rmTask) bool) []*rmTask {
	var out []*rmTask
	for _, id := range m.order {
		if t := m.tasks[id]; ok(t) {
			out = append(out, t)
		}
	}
	return out
}

func (m *refModel) randomTask(ok func(*rmTask) bool) *rmTask {
	ts := m.tasksWhere(ok)
	if len(ts) == 0 {
		return nil
	}
	return pick(m.rng, ts)
}

func isStatus(s imagegen.Status) func(*rmTask) bool {
	return func(t *rmTask) bool { return t.status == s }
}

// live reports whether t's lease still runs (a cap counts it).
func (m *refModel) live(t *rmTask) bool {
	return t.status == imagegen.StatusProcessing && t.leaseUntil > m.now
}

// lapsed reports whether t is processing on a lease that has run out,
// and has not been recovered.
func (m *refModel) lapsed(t *rmTask) bool {
	return t.status == imagegen.StatusProcessing && t.leaseUntil <= m.now
}

func (m *refModel) pendingOf(owner string) int {
	return len(m.tasksWhere(func(t *rmTask) bool { return t.owner == owner && t.status == imagegen.StatusPending }))
}

func (m *refModel) nextRef(kind string) string {
	m.refSeq++
	return fmt.Sprintf("%s-%s-%d", m.prefix, kind, m.refSeq)
}

// apply records a ledger entry the store should have made.
func (m *refModel) apply(owner string, kind imagegen.LedgerKind, amount int64, ref string) {
	m.balances[owner] += amount
	m.ledger[owner] = append(m.ledger[owner], rmEntry{ref: ref, kind: kind, amount: amount})
	m.refs[owner][ref] = true
}

// enqueue puts t at the end of its owner's line, ready after delay.
func (m *refModel) enqueue(t *rmTask, line int, delay time.Duration) {
	t.status = imagegen.StatusPending
	t.line = line
	t.runAfter = m.now + delay
	t.leaseUntil = 0
}

func (m *refModel) newLine() int {
	m.line++
	return m.line
}

// finishFailed fails t, refunding its outstanding charge once, and
// returns the refund.
func (m *refModel) finishFailed(t *rmTask, code imagegen.ErrorCode) int64 {
	m.endFailed(t, code)
	if !t.outstanding {
		return 0
	}
	t.outstanding = false
	m.apply(t.owner, imagegen.LedgerRefund, t.cost, t.refundRef)
	return t.cost
}

// finishCancelled fails t as cancelled and returns the refund: as
// finishFailed, but a processing task's charge stays outstanding when
// keep (CancelParams.KeepStartedCharge).
func (m *refModel) finishCancelled(t *rmTask, keep bool) int64 {
	if keep && t.status == imagegen.StatusProcessing {
		m.endFailed(t, imagegen.CodeCancelled)
		return 0
	}
	return m.finishFailed(t, imagegen.CodeCancelled)
}

// endFailed fails t and refunds nothing.
func (m *refModel) endFailed(t *rmTask, code imagegen.ErrorCode) {
	t.status = imagegen.StatusFailed
	t.code = code
	t.leaseUntil = 0
	m.event(t, imagegen.EventCompleted)
}

// randomStep applies one random operation and checks what it touched.
func (m *refModel) randomStep() {
	ops := []struct {
		weight int
		name   string
		fn     func()
	}{
		{6, "grant", m.opGrant},
		{2, "web charge", m.opWebCharge},
		{1, "duplicate entry", m.opDuplicateEntry},
		{12, "create", m.opCreate},
		{5, "claim", m.opClaim},
		{6, "claim batch", m.opClaimBatch},
		{3, "complete", m.opComplete},
		{2, "fail", m.opFail},
		{3, "retry", m.opRetry},
		{2, "release", m.opRelease},
		{2, "cancel", m.opCancel},
		{2, "renew", m.opRenew},
		{2, "stale finish", m.opStale},
		{5, "advance", m.opAdvance},
		{3, "recover", m.opRecover},
		{3, "requeue", m.opRequeue},
		{1, "pause", m.opPause},
		{2, "progress", m.opProgress},
		{3, "claim webhooks", m.opClaimHooks},
		{3, "webhook outcome", m.opHookOutcome},
		{1, "weight", m.opWeight},
	}
	total := 0
	for _, op := range ops {
		total += op.weight
	}
	n := m.rng.IntN(total)
	for _, op := range ops {
		if n < op.weight {
			m.lastOp = op.name
			m.cur = op.name
			m.seen[op.name]++
			op.fn()
			m.checkQueueStats()
			return
		}
		n -= op.weight
	}
}
