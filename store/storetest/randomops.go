package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
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
//     with and without a recharge: each task's state, refunds exactly
//     once, who may see the task;
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
	t.status = imagegen.StatusFailed
	t.code = code
	t.leaseUntil = 0
	m.event(t, imagegen.EventCompleted)
	if !t.outstanding {
		return 0
	}
	t.outstanding = false
	m.apply(t.owner, imagegen.LedgerRefund, t.cost, t.refundRef)
	return t.cost
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

func (m *refModel) opGrant() {
	owner, amount, ref := m.owner(), int64(2+m.rng.IntN(7)), m.nextRef("grant")
	m.lastOp = fmt.Sprintf("grant %d to %s", amount, owner)
	b, err := m.s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: amount, Ref: ref})
	if err != nil {
		m.fatalf("grant: %v", err)
	}
	m.apply(owner, imagegen.LedgerGrant, amount, ref)
	if b != m.balances[owner] {
		m.fatalf("grant returned balance %d, model %d", b, m.balances[owner])
	}
	m.checkOwner(owner)
}

func (m *refModel) opWebCharge() {
	owner, amount, ref := m.owner(), int64(1+m.rng.IntN(3)), m.nextRef("web")
	m.lastOp = fmt.Sprintf("web charge %d to %s (balance %d)", amount, owner, m.balances[owner])
	b, err := m.s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerWeb, Amount: -amount, Ref: ref})
	if m.balances[owner] < amount {
		if !errors.Is(err, imagegen.ErrInsufficientCredits) {
			m.fatalf("web charge beyond the balance: %v, want ErrInsufficientCredits", err)
		}
	} else {
		if err != nil {
			m.fatalf("web charge: %v", err)
		}
		m.apply(owner, imagegen.LedgerWeb, -amount, ref)
		if b != m.balances[owner] {
			m.fatalf("web charge returned balance %d, model %d", b, m.balances[owner])
		}
	}
	m.checkOwner(owner)
}

// opDuplicateEntry repeats a reference the owner used: refused, the
// current balance returned, nothing changed.
func (m *refModel) opDuplicateEntry() {
	owner := m.owner()
	var used []string
	for _, e := range m.ledger[owner] {
		if e.kind == imagegen.LedgerGrant {
			used = append(used, e.ref)
		}
	}
	if len(used) == 0 {
		return
	}
	ref := pick(m.rng, used)
	m.lastOp = fmt.Sprintf("grant to %s again under %s", owner, ref)
	b, err := m.s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 5, Ref: ref})
	if !errors.Is(err, imagegen.ErrDuplicateEntry) {
		m.fatalf("a repeated reference: %v, want ErrDuplicateEntry", err)
	}
	if b != m.balances[owner] {
		m.fatalf("a repeated reference returned balance %d, model %d", b, m.balances[owner])
	}
	m.checkOwner(owner)
}

func (m *refModel) opCreate() {
	owner, cost, model := m.owner(), int64(1+m.rng.IntN(3)), pick(m.rng, m.models)
	var p imagegen.CreateParams
	if m.rng.IntN(2) == 0 {
		p.MaxPending = 1 + m.rng.IntN(4)
	}
	task := newTask(owner, cost)
	task.ID = m.newID(owner)
	task.Model = model
	if m.rng.IntN(2) == 0 {
		task.Request.CallbackURL = "https://app.example.com/hooks/" + owner
		task.Request.CallbackEvents = pick(m.rng, [][]imagegen.CallbackEvent{
			nil, {imagegen.EventProcessing}, {imagegen.EventCompleted}, {imagegen.EventProcessing, imagegen.EventCompleted},
		})
	}
	m.lastOp = fmt.Sprintf("create %s of %s, cost %d, max pending %d (balance %d, pending %d)",
		task.ID, owner, cost, p.MaxPending, m.balances[owner], m.pendingOf(owner))
	b, err := m.s.CreateTask(ctx, task, p)
	short := m.balances[owner] < cost
	full := p.MaxPending > 0 && m.pendingOf(owner) >= p.MaxPending
	switch {
	case short && full: // the docs do not say which refusal comes first
		m.note("short and full")
		if !errors.Is(err, imagegen.ErrInsufficientCredits) && !errors.Is(err, imagegen.ErrQueueFull) {
			m.fatalf("create, short and full: %v, want ErrInsufficientCredits or ErrQueueFull", err)
		}
	case short:
		m.note("short")
		if !errors.Is(err, imagegen.ErrInsufficientCredits) {
			m.fatalf("create beyond the balance: %v, want ErrInsufficientCredits", err)
		}
	case full:
		m.note("full")
		if !errors.Is(err, imagegen.ErrQueueFull) {
			m.fatalf("create beyond the pending cap: %v, want ErrQueueFull", err)
		}
	default:
		if err != nil {
			m.fatalf("create: %v", err)
		}
		rt := &rmTask{
			id: task.ID, owner: owner, model: model, cost: cost,
			outstanding: true, refundRef: imagegen.RefundRef(task.ID),
			url: task.Request.CallbackURL, events: task.Request.CallbackEvents,
		}
		m.enqueue(rt, m.newLine(), 0)
		m.tasks[task.ID] = rt
		m.order = append(m.order, task.ID)
		m.apply(owner, imagegen.LedgerCharge, -cost, imagegen.ChargeRef(task.ID))
		if b != m.balances[owner] {
			m.fatalf("create returned balance %d, model %d", b, m.balances[owner])
		}
	}
	if err != nil {
		if _, gerr := m.s.Task(ctx, owner, task.ID); !errors.Is(gerr, imagegen.ErrTaskNotFound) {
			m.fatalf("a refused task: Task says %v, want ErrTaskNotFound", gerr)
		}
	} else {
		if m.base.IsZero() {
			got, err := m.s.Task(ctx, owner, task.ID)
			if err != nil {
				m.fatalf("task %s: %v", task.ID, err)
			}
			m.base = got.CreatedAt.Add(-m.now)
		}
		m.checkTask(m.tasks[task.ID])
	}
	m.checkOwner(owner)
}

// newID returns an id as imagegen.NewOwnedID makes one, its random bits
// drawn from the seed's source, so that a store that orders tasks by id
// (where the docs leave the order open: the tasks one recovery
// requeues) orders them alike in every run of the seed.
func (m *refModel) newID(owner string) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(m.rng.Uint32())
	}
	mark := imagegen.OwnerMark(owner)
	b[0], b[1] = byte(mark>>8), byte(mark)
	b[6] = b[6]&0x0f | 0x80 // version 8
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// randomLimits returns the limits of a claim: none, or an owner cap, a
// model cap or both (no model cap on a sharded store, whose model caps
// hold within each shard).
func (m *refModel) randomLimits() imagegen.Limits {
	var l imagegen.Limits
	switch m.rng.IntN(4) {
	case 1:
		l.OwnerConcurrency = 1 + m.rng.IntN(2)
	case 2:
		if !m.h.Sharded {
			l.ModelConcurrency = map[string]int{m.models[0]: 1 + m.rng.IntN(2)}
		}
	case 3:
		l.OwnerConcurrency = 1 + m.rng.IntN(2)
		if !m.h.Sharded {
			l.ModelConcurrency = map[string]int{m.models[m.rng.IntN(2)]: 1}
		}
	}
	return m.withRate(l)
}

// withRate adds the seed's rate, if any, to l.
func (m *refModel) withRate(l imagegen.Limits) imagegen.Limits {
	if m.rate > 0 {
		l.ModelRate = map[string]int{m.models[1]: m.rate}
	}
	return l
}

// rateHeld reports whether the seed's rate holds back t's model now.
func (m *refModel) rateHeld(t *rmTask) bool {
	return m.rate > 0 && t.model == m.models[1] && m.nextStart > m.now
}

func (m *refModel) opClaim() {
	if m.rate > 0 { // every claim of the seed enforces its rate: one of one task
		m.claim(1, m.withRate(imagegen.Limits{}), false)
		return
	}
	m.claim(1, imagegen.Limits{}, true)
}

func (m *refModel) opClaimBatch() {
	m.claim(1+m.rng.IntN(4), m.randomLimits(), false)
}

// claimLease is the lease of a claim: the suite's, or a shorter one.
func (m *refModel) claimLease() time.Duration {
	if m.rng.IntN(3) == 0 {
		return 3 * time.Second
	}
	return lease
}

// claim claims up to n tasks under l (through ClaimTask when single)
// and checks them against the model. Candidates are the pending tasks
// that are ready (past RunAfter) and whose model is not paused. On a
// store that is not sharded the fair-share order across owners is read
// from QueuePositions (which counts the pending tasks ahead of each in
// claim order, by tag), since its tags depend on a virtual time that
// docs/scheduling.md defines differently per backend; the claim must
// then take, in that order, each candidate its caps let start, until
// it has n. Within one owner the order is the model's own: oldest
// queued first.
func (m *refModel) claim(n int, l imagegen.Limits, single bool) {
	cands := m.tasksWhere(func(t *rmTask) bool {
		return t.status == imagegen.StatusPending && t.runAfter <= m.now && m.paused[t.model] <= m.now
	})
	var positions map[string]int
	if !m.h.Sharded {
		positions = m.checkPositions()
		sort.SliceStable(cands, func(i, j int) bool { return positions[cands[i].id] < positions[cands[j].id] })
	}
	ownerRun, modelRun := map[string]int{}, map[string]int{}
	for _, t := range m.tasks {
		if m.live(t) {
			ownerRun[t.owner]++
			modelRun[t.model]++
		}
	}
	held := func(t *rmTask) bool {
		if l.OwnerConcurrency > 0 && ownerRun[t.owner] >= l.OwnerConcurrency {
			return true
		}
		c := l.ModelConcurrency[t.model]
		return (c > 0 && modelRun[t.model] >= c) || m.rateHeld(t)
	}
	if slices.ContainsFunc(cands, m.rateHeld) {
		m.note("rate holds one back")
	}
	lease := m.claimLease()
	m.lastOp = fmt.Sprintf("claim %d (lease %v, limits %+v) of %d candidates", n, lease, l, len(cands))
	var got []*imagegen.Task
	var err error
	if single {
		var one *imagegen.Task
		one, err = m.s.ClaimTask(ctx, lease)
		if err == nil {
			got = []*imagegen.Task{one}
		}
	} else {
		got, err = m.s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: n, Limits: l})
	}
	if errors.Is(err, imagegen.ErrNoTask) {
		got, err = nil, nil
	} else if err == nil && len(got) == 0 {
		m.fatalf("claimed no task and said no error; a claim of none is ErrNoTask")
	}
	if err != nil {
		m.fatalf("claim: %v", err)
	}
	if len(got) > n {
		m.fatalf("claimed %d tasks, asked for %d", len(got), n)
	}
	m.note(fmt.Sprintf("took %d", len(got)))
	if len(got) < n && len(got) < len(cands) {
		m.note("held back some")
	}
	taken := map[string]bool{}
	var want []string
	if !m.h.Sharded {
		for _, t := range cands {
			if len(want) == n {
				break
			}
			if held(t) {
				continue
			}
			want = append(want, t.id)
			ownerRun[t.owner]++
			modelRun[t.model]++
			m.startRated(t)
		}
		ids := make([]string, len(got))
		for i, g := range got {
			ids[i] = g.ID
		}
		if !slices.Equal(ids, want) {
			m.fatalf("claimed %v, want %v (candidates in claim order %v)", ids, want, m.describe(cands, positions))
		}
	}
	if os.Getenv("IMAGEGEN_TEST_TRACE") != "" {
		for _, g := range got {
			m.trace = append(m.trace, slices.Index(m.order, g.ID))
		}
		m.trace = append(m.trace, -1)
	}
	for _, g := range got {
		t, ok := m.tasks[g.ID]
		switch {
		case !ok:
			m.fatalf("claimed %s, which the model does not know", g.ID)
		case taken[g.ID]:
			m.fatalf("claimed %s twice in one batch", g.ID)
		case !slices.Contains(cands, t):
			m.fatalf("claimed %s, which is not a candidate (%s, ready in %v, model paused for %v)",
				g.ID, t.status, t.runAfter-m.now, m.paused[t.model]-m.now)
		}
		if m.h.Sharded {
			if held(t) {
				m.fatalf("claimed %s beyond a cap", g.ID)
			}
			ownerRun[t.owner]++
			modelRun[t.model]++
			m.startRated(t)
			// Within the owner, oldest queued first.
			for _, o := range cands {
				if o.owner == t.owner && !taken[o.id] && o.line < t.line {
					m.fatalf("claimed %s of %s before its older %s", g.ID, t.owner, o.id)
				}
			}
		}
		taken[g.ID] = true
		t.status = imagegen.StatusProcessing
		t.attempt++
		t.leaseUntil = m.now + lease
		t.progress = 0 // a claim starts from 0
		if t.attempt == 1 {
			m.event(t, imagegen.EventProcessing) // its first claim only
		}
		if g.Status != imagegen.StatusProcessing || g.Attempt != t.attempt || g.Owner != t.owner || g.Released != t.released {
			m.fatalf("claimed task %s: status %s attempt %d released %d owner %s, want processing, %d, %d, %s",
				g.ID, g.Status, g.Attempt, g.Released, g.Owner, t.attempt, t.released, t.owner)
		}
		if g.StartedAt.IsZero() {
			m.fatalf("claimed task %s has no StartedAt", g.ID)
		}
		m.checkTask(t)
	}
}

// startRated notes a start of t under the seed's rate: the model's
// next start is allowed one interval (a minute / rate) from now. (A
// start is never made before the next allowed one, so "1/rate later"
// counts from now: no minute sees more than rate starts.)
func (m *refModel) startRated(t *rmTask) {
	if m.rate > 0 && t.model == m.models[1] {
		m.nextStart = m.now + time.Minute/time.Duration(m.rate)
	}
}

// describe renders tasks with their queue positions, for a failure.
func (m *refModel) describe(ts []*rmTask, positions map[string]int) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = fmt.Sprintf("%s(%s,%s,pos %d,line %d)", t.id, t.owner, t.model, positions[t.id], t.line)
	}
	return out
}

// holder returns a processing task and its current attempt: one whose
// lease still runs, or with lapsed, one whose lease ran out.
func (m *refModel) holder(lapsed bool) *rmTask {
	return m.randomTask(func(t *rmTask) bool {
		if lapsed {
			return m.lapsed(t)
		}
		return m.live(t)
	})
}

// holderOrLapsed picks mostly a live holder, sometimes a lapsed one.
func (m *refModel) holderOrLapsed() *rmTask {
	if m.rng.IntN(4) == 0 {
		if t := m.holder(true); t != nil {
			return t
		}
	}
	return m.holder(false)
}

// lateAnswer checks the answer of an operation by t's attempt, whose
// lease has run out unrecovered, and reports whether the store took
// it. The docs leave it open: ErrLeaseLost lists "it expired" among its
// causes, while the lease's holder is still the only one who could act.
func (m *refModel) lateAnswer(t *rmTask, what string, err error) bool {
	if !m.lapsed(t) {
		return false
	}
	switch {
	case err == nil:
		m.lateOutcomes[what+": taken"]++
	case errors.Is(err, imagegen.ErrLeaseLost):
		m.lateOutcomes[what+": ErrLeaseLost"]++
	default:
		m.fatalf("%s by a lapsed attempt: %v, want nil or ErrLeaseLost", what, err)
	}
	return true
}

func (m *refModel) opComplete() {
	t := m.holderOrLapsed()
	if t == nil {
		return
	}
	m.lastOp = fmt.Sprintf("complete %s attempt %d (lapsed %v)", t.id, t.attempt, m.lapsed(t))
	var images []imagegen.Image
	if m.rng.IntN(2) == 0 {
		img := image(fmt.Sprintf("%s-img-%d", t.id, t.attempt))
		img.TaskID, img.Owner = t.id, t.owner
		images = append(images, img)
	}
	var seed *int64
	if m.rng.IntN(3) == 0 {
		seed = new(int64(m.rng.IntN(1000)))
	}
	err := m.s.CompleteTask(ctx, t.id, t.attempt, images, seed)
	if m.lateAnswer(t, "complete", err) && err != nil {
		m.checkTask(t)
		return
	}
	if err != nil {
		m.fatalf("complete: %v", err)
	}
	t.status = imagegen.StatusSuccess
	t.leaseUntil = 0
	m.event(t, imagegen.EventCompleted)
	if seed != nil {
		t.seed = seed // the model's own seed replaces the request's
	}
	t.images = nil
	for _, img := range images {
		t.images = append(t.images, img.ID)
	}
	m.checkTask(t)
	m.checkOwner(t.owner)
}

func (m *refModel) opFail() {
	t := m.holderOrLapsed()
	if t == nil {
		return
	}
	m.lastOp = fmt.Sprintf("fail %s attempt %d (lapsed %v, outstanding %v)", t.id, t.attempt, m.lapsed(t), t.outstanding)
	refund, err := m.s.FailTask(ctx, t.id, t.attempt, fail("provider down"))
	if m.lateAnswer(t, "fail", err) && err != nil {
		m.checkTask(t)
		m.checkOwner(t.owner)
		return
	}
	if err != nil {
		m.fatalf("fail: %v", err)
	}
	m.note(fmt.Sprintf("refund %v", t.outstanding))
	if want := m.finishFailed(t, imagegen.CodeProviderError); refund != want {
		m.fatalf("fail refunded %d, want %d", refund, want)
	}
	m.checkTask(t)
	m.checkOwner(t.owner)
}

func (m *refModel) opRetry() {
	t := m.holderOrLapsed()
	if t == nil {
		return
	}
	delay := time.Duration(m.rng.IntN(4)) * time.Second
	m.lastOp = fmt.Sprintf("retry %s attempt %d after %v (lapsed %v)", t.id, t.attempt, delay, m.lapsed(t))
	err := m.s.RetryTask(ctx, t.id, t.attempt, delay, "503 from provider")
	if m.lateAnswer(t, "retry", err) && err != nil {
		m.checkTask(t)
		return
	}
	if err != nil {
		m.fatalf("retry: %v", err)
	}
	m.enqueue(t, m.newLine(), delay)
	m.checkTask(t)
}

func (m *refModel) opRelease() {
	t := m.holderOrLapsed()
	if t == nil {
		return
	}
	m.lastOp = fmt.Sprintf("release %s attempt %d (lapsed %v)", t.id, t.attempt, m.lapsed(t))
	err := m.s.ReleaseTask(ctx, t.id, t.attempt)
	if m.lateAnswer(t, "release", err) && err != nil {
		m.checkTask(t)
		return
	}
	if err != nil {
		m.fatalf("release: %v", err)
	}
	t.released++
	m.enqueue(t, m.newLine(), 0)
	m.checkTask(t)
}

func (m *refModel) opProgress() {
	t := m.holderOrLapsed()
	if t == nil {
		return
	}
	p := float64(1+m.rng.IntN(8)) / 8
	m.lastOp = fmt.Sprintf("progress %s attempt %d %v (lapsed %v)", t.id, t.attempt, p, m.lapsed(t))
	err := m.s.SetProgress(ctx, t.id, t.attempt, p)
	if m.lateAnswer(t, "progress", err) && err != nil {
		m.checkTask(t)
		return
	}
	if err != nil {
		m.fatalf("progress: %v", err)
	}
	t.progress = p
	m.checkTask(t)
}

func (m *refModel) opRenew() {
	t := m.holderOrLapsed()
	if t == nil {
		return
	}
	m.lastOp = fmt.Sprintf("renew %s attempt %d (lapsed %v)", t.id, t.attempt, m.lapsed(t))
	err := m.s.RenewLease(ctx, t.id, t.attempt, lease)
	if m.lateAnswer(t, "renew", err) && err != nil {
		m.checkTask(t)
		return
	}
	if err != nil {
		m.fatalf("renew: %v", err)
	}
	t.leaseUntil = m.now + lease
	m.checkTask(t)
}

// opStale acts with an attempt that does not hold the task: an older
// one, or any attempt on a task that is not processing. Every holder's
// operation says ErrLeaseLost and changes nothing.
func (m *refModel) opStale() {
	t := m.randomTask(func(t *rmTask) bool { return t.attempt > 0 })
	if t == nil {
		return
	}
	attempt := t.attempt
	if t.status == imagegen.StatusProcessing {
		attempt = m.rng.IntN(t.attempt) // 0 .. attempt-1: stale
	}
	m.lastOp = fmt.Sprintf("stale attempt %d of %s (%s, attempt %d)", attempt, t.id, t.status, t.attempt)
	var err error
	switch m.rng.IntN(6) {
	case 0:
		err = m.s.CompleteTask(ctx, t.id, attempt, []imagegen.Image{image(t.id + "-stale")}, nil)
	case 1:
		err = errOf(m.s.FailTask(ctx, t.id, attempt, fail("stale")))
	case 2:
		err = m.s.RetryTask(ctx, t.id, attempt, 0, "stale")
	case 3:
		err = m.s.ReleaseTask(ctx, t.id, attempt)
	case 4:
		err = m.s.RenewLease(ctx, t.id, attempt, lease)
	case 5:
		err = m.s.SetProgress(ctx, t.id, attempt, 0.5)
	}
	if !errors.Is(err, imagegen.ErrLeaseLost) {
		m.fatalf("a stale attempt: %v, want ErrLeaseLost", err)
	}
	m.checkTask(t)
	m.checkOwner(t.owner)
}

func (m *refModel) opCancel() {
	t := m.randomTask(func(*rmTask) bool { return true })
	if t == nil {
		return
	}
	owner := t.owner
	if m.rng.IntN(5) == 0 {
		owner = pick(m.rng, slices.DeleteFunc(slices.Clone(m.owners), func(o string) bool { return o == t.owner }))
	}
	m.lastOp = fmt.Sprintf("cancel %s (%s of %s) as %s", t.id, t.status, t.owner, owner)
	refund, err := m.s.CancelTask(ctx, owner, t.id)
	switch {
	case owner != t.owner:
		if !errors.Is(err, imagegen.ErrTaskNotFound) {
			m.fatalf("cancel by another owner: %v, want ErrTaskNotFound", err)
		}
	case t.status.Terminal():
		if !errors.Is(err, imagegen.ErrInvalidTransition) {
			m.fatalf("cancel of a finished task: %v, want ErrInvalidTransition", err)
		}
	default:
		if err != nil {
			m.fatalf("cancel: %v", err)
		}
		m.note(fmt.Sprintf("%s, refund %v", t.status, t.outstanding))
		if want := m.finishFailed(t, imagegen.CodeCancelled); refund != want {
			m.fatalf("cancel refunded %d, want %d", refund, want)
		}
	}
	m.checkTask(t)
	m.checkOwner(t.owner)
}

func (m *refModel) opAdvance() {
	d := time.Duration(1+m.rng.IntN(8000)) * time.Millisecond
	m.lastOp = fmt.Sprintf("advance %v", d)
	m.h.Advance(d)
	m.now += d
}

func (m *refModel) opRecover() {
	maxAttempts := 1 + m.rng.IntN(3)
	m.lastOp = fmt.Sprintf("recover, max attempts %d", maxAttempts)
	rec, err := m.s.RecoverExpired(ctx, maxAttempts)
	if err != nil {
		m.fatalf("recover: %v", err)
	}
	requeued, line := 0, m.newLine()
	want := map[string]imagegen.ExpiredTask{}
	for _, t := range m.tasksWhere(m.lapsed) {
		if t.attempt-t.released >= maxAttempts {
			refund := m.finishFailed(t, imagegen.CodeInternal)
			want[t.id] = imagegen.ExpiredTask{ID: t.id, Owner: t.owner, Model: t.model, Attempts: t.attempt - t.released, Cost: t.cost, Refund: refund}
			continue
		}
		requeued++
		m.enqueue(t, line, 0)
	}
	m.note(fmt.Sprintf("requeued %d failed %d", requeued, len(want)))
	if requeued > 1 && os.Getenv("IMAGEGEN_TEST_TRACE") != "" {
		m.trace = append(m.trace, -2)
	}
	if rec.Requeued != requeued {
		m.fatalf("recovery requeued %d, want %d", rec.Requeued, requeued)
	}
	got := map[string]imagegen.ExpiredTask{}
	for _, f := range rec.Failed {
		got[f.ID] = f
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		m.fatalf("recovery failed %v, want %v", got, want)
	}
	m.checkAll()
}

func (m *refModel) opRequeue() {
	t := m.randomTask(isStatus(imagegen.StatusFailed))
	if t == nil || m.rng.IntN(5) == 0 {
		t = m.randomTask(func(*rmTask) bool { return true })
	}
	if t == nil {
		return
	}
	recharge := m.rng.IntN(2) == 0
	m.lastOp = fmt.Sprintf("requeue %s (%s, attempt %d) recharge %v (balance %d)", t.id, t.status, t.attempt, recharge, m.balances[t.owner])
	err := m.s.RequeueTask(ctx, t.id, recharge)
	ref := imagegen.RechargeRef(t.id, t.attempt)
	switch {
	case t.status != imagegen.StatusFailed:
		if !errors.Is(err, imagegen.ErrInvalidTransition) {
			m.fatalf("requeue of a %s task: %v, want ErrInvalidTransition", t.status, err)
		}
	case recharge && m.balances[t.owner] < t.cost && m.refs[t.owner][ref]:
		// The docs do not say which refusal comes first.
		m.note("short, recharge reference taken")
		if !errors.Is(err, imagegen.ErrInsufficientCredits) && !errors.Is(err, imagegen.ErrDuplicateEntry) {
			m.fatalf("requeue, short and its recharge's reference taken: %v, want ErrInsufficientCredits or ErrDuplicateEntry", err)
		}
	case recharge && m.balances[t.owner] < t.cost:
		m.note("short")
		if !errors.Is(err, imagegen.ErrInsufficientCredits) {
			m.fatalf("requeue with a recharge beyond the balance: %v, want ErrInsufficientCredits", err)
		}
	case recharge && m.refs[t.owner][ref]:
		// It failed again before a claim moved its attempt on (it was
		// cancelled while pending): the recharge's reference is taken
		// (store.go, RequeueTask).
		m.note("recharge reference taken")
		if !errors.Is(err, imagegen.ErrDuplicateEntry) {
			m.fatalf("requeue with a recharge whose reference %s is taken: %v, want ErrDuplicateEntry", ref, err)
		}
	default:
		if err != nil {
			m.fatalf("requeue: %v", err)
		}
		m.note(fmt.Sprintf("done, recharge %v", recharge))
		if recharge {
			m.apply(t.owner, imagegen.LedgerCharge, -t.cost, ref)
			t.outstanding = true
			t.refundRef = imagegen.RerefundRef(t.id, t.attempt)
		}
		t.requeued = true
		t.code = ""
		for _, id := range storekit.TaskWebhookIDs(t.id) { // its queued deliveries are dropped
			delete(m.hooks, id)
		}
		m.enqueue(t, m.newLine(), 0)
	}
	m.checkTask(t)
	m.checkOwner(t.owner)
}

func (m *refModel) opPause() {
	model := pick(m.rng, m.models)
	d := time.Duration(1+m.rng.IntN(8)) * time.Second
	m.lastOp = fmt.Sprintf("pause %s for %v", model, d)
	if err := m.s.PauseModel(ctx, model, d); err != nil {
		m.fatalf("pause: %v", err)
	}
	m.paused[model] = max(m.paused[model], m.now+d) // a pause never shortens one in force
}

func (m *refModel) opWeight() {
	owner, w := m.owner(), 1+m.rng.IntN(3)
	m.lastOp = fmt.Sprintf("weight %s %d", owner, w)
	if err := m.s.SetOwnerWeight(ctx, owner, w); err != nil {
		m.fatalf("set weight: %v", err)
	}
	got, err := m.s.OwnerWeight(ctx, owner)
	if err != nil || got != w {
		m.fatalf("weight reads back %d, %v; want %d", got, err, w)
	}
}

// event queues t's delivery of e, due now, if t's callback wants it.
func (m *refModel) event(t *rmTask, e imagegen.CallbackEvent) {
	if t.url == "" || !imagegen.Wants(t.events, e) {
		return
	}
	m.hooks[storekit.WebhookID(t.id, e)] = &rmHook{taskID: t.id, owner: t.owner, url: t.url, event: e, due: m.now}
}

// opClaimHooks claims up to n due deliveries: all of them when there
// are n or fewer, else n of those due longest; each is leased.
func (m *refModel) opClaimHooks() {
	n, lease := 1+m.rng.IntN(4), m.claimLease()
	var due []string
	for id, h := range m.hooks {
		if h.due <= m.now {
			due = append(due, id)
		}
	}
	m.lastOp = fmt.Sprintf("claim %d webhooks (lease %v) of %d due", n, lease, len(due))
	got, err := m.s.ClaimWebhooks(ctx, lease, n)
	if err != nil {
		m.fatalf("claim webhooks: %v", err)
	}
	m.note(fmt.Sprintf("took %d", len(got)))
	if len(got) > n || (!m.h.Sharded && len(got) != min(n, len(due))) {
		m.fatalf("claimed %d deliveries, want %d of %d due", len(got), min(n, len(due)), len(due))
	}
	taken := map[string]bool{}
	var latest time.Duration
	for _, d := range got {
		id, _, _ := storekit.ParseClaimedWebhookID(d.ID)
		h := m.hooks[id]
		switch {
		case h == nil:
			m.fatalf("claimed delivery %s (%+v), which the model does not have", id, d)
		case h.due > m.now:
			m.fatalf("claimed delivery %s, due in %v", id, h.due-m.now)
		case taken[id]:
			m.fatalf("claimed delivery %s twice", id)
		case d.TaskID != h.taskID || d.Event != h.event || d.Owner != h.owner || d.URL != h.url || d.Attempts != h.attempts:
			m.fatalf("claimed %+v, model %+v", d, *h)
		}
		taken[id] = true
		latest = max(latest, h.due)
	}
	if !m.h.Sharded {
		for _, id := range due {
			if !taken[id] && m.hooks[id].due < latest {
				m.fatalf("delivery %s, due %v before one claimed, was left", id, latest-m.hooks[id].due)
			}
		}
	}
	for _, d := range got {
		id, _, _ := storekit.ParseClaimedWebhookID(d.ID)
		m.hooks[id].due = m.now + lease
		m.claims = append(m.claims, rmClaim{id: d.ID, hook: id, leaseEnd: m.now + lease})
	}
}

// opHookOutcome acks, retries or postpones a delivery under an ID a
// claim handed out (acting only while that claim's lease end is still
// the delivery's due time) or, now and then, under its plain WebhookID
// (acting however it stands).
func (m *refModel) opHookOutcome() {
	if len(m.claims) == 0 {
		return
	}
	c := m.claims[len(m.claims)-1-m.rng.IntN(min(len(m.claims), 6))]
	h := m.hooks[c.hook]
	id, acts := c.id, h != nil && h.due == c.leaseEnd
	if m.rng.IntN(5) == 0 {
		id, acts = c.hook, h != nil
	}
	delay := time.Duration(m.rng.IntN(4)) * time.Second
	var err error
	switch m.rng.IntN(3) {
	case 0:
		m.lastOp = fmt.Sprintf("ack webhook %s (acts %v)", id, acts)
		if err = m.s.AckWebhook(ctx, id); acts {
			delete(m.hooks, c.hook)
		}
	case 1:
		m.lastOp = fmt.Sprintf("retry webhook %s after %v (acts %v)", id, delay, acts)
		if err = m.s.RetryWebhook(ctx, id, delay); acts {
			h.attempts++
			h.due = m.now + delay
		}
	case 2:
		m.lastOp = fmt.Sprintf("postpone webhook %s by %v (acts %v)", id, delay, acts)
		if err = m.s.PostponeWebhook(ctx, id, delay); acts {
			h.due = m.now + delay
		}
	}
	m.note(fmt.Sprintf("acts %v", acts))
	if err != nil {
		m.fatalf("webhook outcome: %v", err)
	}
}

// drain cancels every unfinished task of the seed, so that the next
// seed starts on an empty queue.
func (m *refModel) drain() {
	m.lastOp = "drain"
	for _, t := range m.tasksWhere(func(t *rmTask) bool { return !t.status.Terminal() }) {
		refund, err := m.s.CancelTask(ctx, t.owner, t.id)
		if err != nil {
			m.fatalf("cancel %s at the end: %v", t.id, err)
		}
		if want := m.finishFailed(t, imagegen.CodeCancelled); refund != want {
			m.fatalf("cancel of %s at the end refunded %d, want %d", t.id, refund, want)
		}
	}
	// A plain WebhookID acks a delivery however it stands.
	for id := range m.hooks {
		if err := m.s.AckWebhook(ctx, id); err != nil {
			m.fatalf("ack %s at the end: %v", id, err)
		}
		delete(m.hooks, id)
	}
	if got, err := m.s.ClaimWebhooks(ctx, lease, 10); err != nil || len(got) != 0 {
		m.fatalf("deliveries left once all were acked: %+v, %v", got, err)
	}
}

// checkTask compares the store's task with the model's, as its owner
// sees it and as another owner does not.
func (m *refModel) checkTask(t *rmTask) {
	m.t.Helper()
	got, err := m.s.Task(ctx, t.owner, t.id)
	if err != nil {
		m.fatalf("task %s: %v", t.id, err)
	}
	switch {
	case got.Status != t.status:
		m.fatalf("task %s is %s, model %s", t.id, got.Status, t.status)
	case got.Attempt != t.attempt || got.Released != t.released:
		m.fatalf("task %s: attempt %d released %d, model %d %d", t.id, got.Attempt, got.Released, t.attempt, t.released)
	case got.Cost != t.cost || got.Model != t.model || got.Owner != t.owner:
		m.fatalf("task %s: cost %d model %s owner %s, model %d %s %s", t.id, got.Cost, got.Model, got.Owner, t.cost, t.model, t.owner)
	case got.StartedAt.IsZero() != (t.attempt == 0):
		m.fatalf("task %s: StartedAt %v after %d claims", t.id, got.StartedAt, t.attempt)
	case got.FinishedAt.IsZero() == t.status.Terminal():
		m.fatalf("task %s (%s): FinishedAt %v", t.id, got.Status, got.FinishedAt)
	}
	switch t.status {
	case imagegen.StatusFailed:
		if got.ErrorCode != t.code || got.Error == "" {
			m.fatalf("task %s failed with %q %q, model code %q", t.id, got.ErrorCode, got.Error, t.code)
		}
		if !got.Refunded { // refunded now, or before it was requeued free
			m.fatalf("failed task %s is not marked refunded", t.id)
		}
	case imagegen.StatusSuccess:
		if (got.Request.Seed == nil) != (t.seed == nil) || (t.seed != nil && *got.Request.Seed != *t.seed) {
			m.fatalf("task %s has seed %v, model %v", t.id, got.Request.Seed, t.seed)
		}
		if !slices.Equal(got.Images, t.images) {
			m.fatalf("task %s has images %v, model %v", t.id, got.Images, t.images)
		}
		if got.Error != "" || got.ErrorCode != "" {
			m.fatalf("task %s succeeded with error %q %q", t.id, got.ErrorCode, got.Error)
		}
		if !t.requeued && got.Refunded {
			m.fatalf("task %s succeeded and is marked refunded", t.id)
		}
	default:
		if got.Error != "" || got.ErrorCode != "" {
			m.fatalf("%s task %s has error %q %q", t.status, t.id, got.ErrorCode, got.Error)
		}
	}
	if at := m.base.Add(m.now); got.CreatedAt.After(at) {
		m.fatalf("task %s created at %v, after now (%v)", t.id, got.CreatedAt, at)
	}
	if t.status == imagegen.StatusPending {
		// A retry's delay sets when it is ready; otherwise it is ready
		// already (a store may keep when it was queued, or nothing).
		if at := m.base.Add(t.runAfter); t.runAfter > m.now && !got.RunAfter.Equal(at) {
			m.fatalf("task %s is ready at %v, model %v", t.id, got.RunAfter, at)
		}
		if at := m.base.Add(m.now); t.runAfter <= m.now && got.RunAfter.After(at) {
			m.fatalf("task %s is ready at %v, later than now, %v", t.id, got.RunAfter, at)
		}
	}
	if t.status == imagegen.StatusProcessing {
		if at := m.base.Add(t.leaseUntil); !got.LeaseUntil.Equal(at) {
			m.fatalf("task %s is leased until %v, model %v", t.id, got.LeaseUntil, at)
		}
		if got.Progress != t.progress {
			m.fatalf("task %s has progress %v, model %v", t.id, got.Progress, t.progress)
		}
	}
	if t.status == imagegen.StatusSuccess {
		for _, id := range t.images {
			img, err := m.s.Image(ctx, id)
			if err != nil || img.TaskID != t.id || img.Owner != t.owner {
				m.fatalf("image %s of task %s: %+v, %v", id, t.id, img, err)
			}
		}
	}
	byID, err := m.s.TaskByID(ctx, t.id)
	if err != nil || byID.Status != got.Status || byID.Attempt != got.Attempt || byID.Owner != t.owner {
		m.fatalf("TaskByID(%s): %+v, %v; Task says %s attempt %d", t.id, byID, err, got.Status, got.Attempt)
	}
	other := pick(m.rng, slices.DeleteFunc(slices.Clone(m.owners), func(o string) bool { return o == t.owner }))
	if _, err := m.s.Task(ctx, other, t.id); !errors.Is(err, imagegen.ErrTaskNotFound) {
		m.fatalf("task %s of %s, read by %s: %v, want ErrTaskNotFound", t.id, t.owner, other, err)
	}
}

// checkOwner compares the owner's balance and ledger with the model's:
// the same entries (a recovery's refunds may come in any order, so as a
// multiset), each entry's BalanceAfter the sum so far, never below 0.
func (m *refModel) checkOwner(owner string) {
	m.t.Helper()
	b, err := m.s.Balance(ctx, owner)
	if err != nil {
		m.fatalf("balance: %v", err)
	}
	if b != m.balances[owner] {
		m.fatalf("%s's balance is %d, model %d", owner, b, m.balances[owner])
	}
	entries, err := m.s.Ledger(ctx, owner)
	if err != nil {
		m.fatalf("ledger: %v", err)
	}
	var sum int64
	got := make([]string, 0, len(entries))
	for _, e := range entries {
		sum += e.Amount
		if e.BalanceAfter != sum || sum < 0 {
			m.fatalf("%s's ledger: entry %s has BalanceAfter %d, the sum so far is %d", owner, e.Ref, e.BalanceAfter, sum)
		}
		got = append(got, fmt.Sprintf("%s %s %d", e.Ref, e.Kind, e.Amount))
	}
	want := make([]string, 0, len(m.ledger[owner]))
	for _, e := range m.ledger[owner] {
		want = append(want, fmt.Sprintf("%s %s %d", e.ref, e.kind, e.amount))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		m.fatalf("%s's ledger:\n%v\nmodel:\n%v", owner, got, want)
	}
	if sum != b {
		m.fatalf("%s's ledger sums to %d, balance %d", owner, sum, b)
	}
}

// checkQueueStats compares the counts of pending and processing tasks.
// The store may count a lapsed lease's task as processing or not until
// it is recovered ("tasks leased to a worker"), so Processing is
// checked only when no lease has lapsed.
func (m *refModel) checkQueueStats() {
	m.t.Helper()
	st, err := m.s.QueueStats(ctx)
	if err != nil {
		m.fatalf("queue stats: %v", err)
	}
	pending := len(m.tasksWhere(isStatus(imagegen.StatusPending)))
	processing := len(m.tasksWhere(isStatus(imagegen.StatusProcessing)))
	lapsed := len(m.tasksWhere(m.lapsed))
	if st.Pending != int64(pending) || (lapsed == 0 && st.Processing != int64(processing)) {
		m.fatalf("queue stats %d pending %d processing, model %d %d (%d lapsed)", st.Pending, st.Processing, pending, processing, lapsed)
	}
	// The oldest ready task has waited since it became ready: queued,
	// or its retry delay ended (its RunAfter, in the model).
	var oldest time.Duration
	for _, t := range m.tasksWhere(func(t *rmTask) bool { return t.status == imagegen.StatusPending && t.runAfter <= m.now }) {
		oldest = max(oldest, m.now-t.runAfter)
	}
	if st.OldestPending != oldest {
		m.fatalf("queue stats: the oldest ready task has waited %v, model %v", st.OldestPending, oldest)
	}
}

// checkPositions reads the queue positions of every task of the seed:
// -1 for those not pending, and for the pending ones each a distinct
// place 0..P-1 (earlier seeds leave no pending task), an owner's
// tasks in the order it queued them. It returns the positions.
func (m *refModel) checkPositions() map[string]int {
	m.t.Helper()
	pos, err := m.s.QueuePositions(ctx, m.order)
	if err != nil {
		m.fatalf("queue positions: %v", err)
	}
	if len(pos) != len(m.order) {
		m.fatalf("%d queue positions for %d ids", len(pos), len(m.order))
	}
	out := map[string]int{}
	var pending []*rmTask
	seen := map[int]bool{}
	for i, id := range m.order {
		t := m.tasks[id]
		out[id] = pos[i]
		if t.status != imagegen.StatusPending {
			if pos[i] != -1 {
				m.fatalf("%s task %s has queue position %d, want -1", t.status, id, pos[i])
			}
			continue
		}
		pending = append(pending, t)
		if pos[i] < 0 || seen[pos[i]] {
			m.fatalf("pending task %s has queue position %d (positions %v)", id, pos[i], pos)
		}
		seen[pos[i]] = true
	}
	for _, a := range pending {
		if out[a.id] >= len(pending) {
			m.fatalf("pending task %s has queue position %d of %d pending", a.id, out[a.id], len(pending))
		}
		for _, b := range pending {
			if a.owner == b.owner && a.line < b.line && out[a.id] > out[b.id] {
				m.fatalf("%s's task %s, queued before %s, has position %d after its %d", a.owner, a.id, b.id, out[a.id], out[b.id])
			}
		}
	}
	return out
}

// checkAll compares every task of the seed and every owner, and the
// owners' task lists by status.
func (m *refModel) checkAll() {
	m.t.Helper()
	for _, id := range m.order {
		m.checkTask(m.tasks[id])
	}
	for _, o := range m.owners {
		m.checkOwner(o)
		for _, st := range []imagegen.Status{imagegen.StatusPending, imagegen.StatusProcessing, imagegen.StatusSuccess, imagegen.StatusFailed} {
			page, err := m.s.ListTasks(ctx, o, st, 100, "")
			if err != nil {
				m.fatalf("list %s's %s tasks: %v", o, st, err)
			}
			var got []string
			for _, task := range page.Tasks {
				got = append(got, task.ID)
			}
			var want []string
			for _, t := range m.tasksWhere(func(t *rmTask) bool { return t.owner == o && t.status == st }) {
				want = append(want, t.id)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) || page.Next != "" {
				m.fatalf("%s's %s tasks %v (next %q), model %v", o, st, got, page.Next, want)
			}
		}
	}
	if !m.h.Sharded {
		m.checkPositions()
	}
	m.checkQueueStats()
	for _, o := range m.owners {
		m.checkLedgerPages(o)
		m.checkListAll(o)
	}
	m.checkSchedulerStats(m.randomLimits())
}

// checkLedgerPages reads the owner's ledger a few entries a page: newest
// first, the entries Ledger gives oldest first.
func (m *refModel) checkLedgerPages(owner string) {
	m.t.Helper()
	all, err := m.s.Ledger(ctx, owner)
	if err != nil {
		m.fatalf("ledger: %v", err)
	}
	var paged []imagegen.LedgerEntry
	cursor := ""
	for range len(all) + 2 {
		page, err := m.s.ListLedger(ctx, owner, 3, cursor)
		if err != nil {
			m.fatalf("list %s's ledger: %v", owner, err)
		}
		paged = append(paged, page.Entries...)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	slices.Reverse(paged)
	if len(paged) != len(all) {
		m.fatalf("%s's ledger pages hold %d entries, Ledger %d", owner, len(paged), len(all))
	}
	for i := range all {
		a, b := all[i], paged[i]
		if a.ID != b.ID || a.Ref != b.Ref || a.Amount != b.Amount || a.BalanceAfter != b.BalanceAfter {
			m.fatalf("%s's ledger entry %d: %+v in Ledger, %+v in its pages", owner, i, a, b)
		}
	}
}

// checkListAll lists the owner's tasks through the operators' listing:
// the model's tasks, each with its status.
func (m *refModel) checkListAll(owner string) {
	m.t.Helper()
	got := map[string]imagegen.Status{}
	cursor := ""
	for range 100 {
		page, err := m.s.ListAllTasks(ctx, imagegen.TaskFilter{Owner: owner}, 7, cursor)
		if err != nil {
			m.fatalf("list all of %s: %v", owner, err)
		}
		for _, task := range page.Tasks {
			got[task.ID] = task.Status
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	want := map[string]imagegen.Status{}
	for _, t := range m.tasksWhere(func(t *rmTask) bool { return t.owner == owner }) {
		want[t.id] = t.status
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		m.fatalf("ListAllTasks of %s: %v, model %v", owner, got, want)
	}
}

// checkSchedulerStats compares what SchedulerStats says l holds back
// now with the model: each ready pending task is held by its owner's
// cap, its model's cap, or its model's pause (model_rate). A task held
// for two reasons may be counted under either, so each count is only
// bounded; the busiest owners' counts and the seed's paused models
// are exact. On a sharded store only the pauses are checked.
func (m *refModel) checkSchedulerStats(l imagegen.Limits) {
	m.t.Helper()
	st, err := m.s.SchedulerStats(ctx, l)
	if err != nil {
		m.fatalf("scheduler stats: %v", err)
	}
	for _, model := range m.models {
		until, paused := st.Paused[model]
		if paused != (m.paused[model] > m.now) {
			m.fatalf("scheduler stats: %s paused %v (until %v), model %v", model, paused, until, m.paused[model]-m.now)
		}
	}
	if m.h.Sharded {
		return
	}
	ownerRun, modelRun := map[string]int{}, map[string]int{}
	for _, t := range m.tasks {
		if m.live(t) {
			ownerRun[t.owner]++
			modelRun[t.model]++
		}
	}
	only, either := map[imagegen.HoldReason]int{}, map[imagegen.HoldReason]int{}
	for _, t := range m.tasksWhere(func(t *rmTask) bool { return t.status == imagegen.StatusPending && t.runAfter <= m.now }) {
		var why []imagegen.HoldReason
		if l.OwnerConcurrency > 0 && ownerRun[t.owner] >= l.OwnerConcurrency {
			why = append(why, imagegen.HeldOwnerCap)
		}
		if c := l.ModelConcurrency[t.model]; c > 0 && modelRun[t.model] >= c {
			why = append(why, imagegen.HeldModelCap)
		}
		if m.paused[t.model] > m.now || (l.ModelRate[t.model] > 0 && m.rateHeld(t)) {
			why = append(why, imagegen.HeldModelRate)
		}
		for _, r := range why {
			either[r]++
		}
		if len(why) == 1 {
			only[why[0]]++
		}
	}
	for _, r := range imagegen.HoldReasons() {
		if n := st.Held[r]; n < only[r] || n > either[r] {
			m.fatalf("scheduler stats under %+v: %d held by %s, model %d to %d (held %v)", l, n, r, only[r], either[r], st.Held)
		}
	}
	for _, load := range st.Busiest {
		if !slices.Contains(m.owners, load.Owner) {
			if load.Pending != 0 {
				m.fatalf("scheduler stats: %+v among the busiest, an earlier seed's owner", load)
			}
			continue
		}
		want := imagegen.OwnerLoad{Owner: load.Owner, Pending: m.pendingOf(load.Owner), Running: ownerRun[load.Owner]}
		if load != want {
			m.fatalf("scheduler stats: busiest %+v, model %+v", load, want)
		}
	}
	for _, o := range m.owners {
		if m.pendingOf(o) > 0 && !slices.ContainsFunc(st.Busiest, func(l imagegen.OwnerLoad) bool { return l.Owner == o }) {
			m.fatalf("scheduler stats: %s, with %d pending, is not among the busiest %+v", o, m.pendingOf(o), st.Busiest)
		}
	}
}
