package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// The size of ConcurrentStressKeepsTheRules: stressRounds rounds, each of
// stressWorkers goroutines doing stressSteps operations; a quiescent
// checkpoint after each round.
const (
	stressRounds  = 3
	stressWorkers = 4
	stressSteps   = 40
)

// Its leases, delays and clock steps. The clock moves in whole seconds
// (Harness.Advance, by worker 0 only) and every lease and delay ends at a
// half or a third of one, so no deadline ever falls on the clock's time
// exactly, where stores may round either way. The long lease outlasts the
// whole run (a few minutes of the clock), so only short leases ever run
// out; the whole run stays well within the harness's retention.
const (
	stressLongLease   = time.Hour + 500*time.Millisecond
	stressShortLease  = 10*time.Second + 500*time.Millisecond
	stressMaxAttempts = 2
	stressDrainStep   = 15 * time.Second // past every short lease and retry delay
)

// stressDelays are the retry delays RetryTask is given.
var stressDelays = []time.Duration{0, 1300 * time.Millisecond, 3300 * time.Millisecond}

// stressOwners and stressModels are the names the case uses; its caps are
// stressLimits.
var (
	stressOwners = []string{"sa", "sb", "sc", "sd"}
	stressModels = []string{"m1", "m2"}
	stressLimits = imagegen.Limits{OwnerConcurrency: 2, ModelConcurrency: map[string]int{"m1": 4, "m2": 3}}
)

// testConcurrentStress runs stressWorkers goroutines at once on one store,
// each a seeded random mix of: submits (CreateTask of two models, on
// balances that run short now and then), grants, claims of 1 to 3 tasks
// under an owner cap and model caps (some on a short lease), and, for the
// tasks a goroutine holds, completes, fails, retries with and without a
// delay, releases, and walking away from a short lease; cancels (by the
// owner) of tasks in any state (pending, parked behind a cap, waiting out
// a retry delay, running, finished); RecoverExpired, with the clock
// moved forward by one goroutine so that short leases run out.
//
// While they run it checks what each goroutine sees:
//
//   - no claim gives an owner or a model more running tasks than its cap
//     (a task counts as running from its claim's return until just before
//     the call that ends its attempt, so the count never exceeds the
//     store's; tasks on a short lease and tasks someone cancels are not
//     counted: their end is not seen);
//   - no task is handed out twice at one attempt, nor while the attempt
//     that held it is still running;
//   - an attempt on a long lease that no one cancelled is never told it
//     lost its lease;
//   - each refund a call reports is the task's cost.
//
// After each round, with every goroutine stopped, it reads every task:
// QueueStats counts the pending and processing ones, and SchedulerStats
// lists each owner's pending and live running tasks and holds back, by
// reason, what the caps allow (not on a sharded store, where caps and
// the busiest owners are per shard). Balances are the grants less the
// cost of every task not failed, and each ledger sums to its balance.
//
// At the end it completes what the goroutines still hold, moves the
// clock past every lease and delay, recovers, and claims with no limits
// until ErrNoTask: every task still pending is claimed exactly once.
// Then every task created is finished, each in the one way a call that
// succeeded (or a recovery that reported it) explains: succeeded by one
// complete, failed by one fail, one cancel or one recovery; each has one
// charge, and one refund if and only if it failed; tasks refused for
// want of credits do not exist.
//
// It does not check the claim order (fair share, oldest first), rates,
// pauses, renewals, progress, images, operators' requeues, webhooks or
// QueuePositions: other cases, and RandomOperationsAgreeWithModel
// single-threaded, do. Nor does it time anything. Its interleavings are
// the scheduler's, so a failure may not repeat on the next run; its size
// (stressRounds x stressWorkers x stressSteps operations) does.
func testConcurrentStress(t *testing.T, h Harness) {
	st := newStressRun(t, h)
	for round := range stressRounds {
		var wg sync.WaitGroup
		for w := range stressWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st.work(round, w)
			}()
		}
		wg.Wait()
		st.reportFailures(fmt.Sprintf("round %d", round))
		st.checkpoint(fmt.Sprintf("after round %d", round))
	}
	st.drain()
	st.checkFinal()
	t.Logf("%d tasks created (%d refused), %d claims (%d found none), %d ended by complete, %d fail, %d cancel, %d recovery; %d retried, %d released, %d walked away, %d requeued by recovery, %d leases lost",
		len(st.log.created), st.log.refused, st.log.claims, st.log.count["no task"], st.log.count["complete"], st.log.count["fail"], st.log.count["cancel"],
		st.log.count["recovery"], st.log.count["retry"], st.log.count["release"], st.log.count["walk away"], st.log.count["requeued"], st.log.count["lost"])
}

// stressRun is one run of testConcurrentStress.
type stressRun struct {
	t    *testing.T
	h    Harness
	s    imagegen.Store
	log  *stressLog
	base time.Time // the store's time at the start
	// elapsed is how far the clock has moved since base. Worker 0
	// writes it while a round runs, the test's goroutine between rounds.
	elapsed time.Duration
	// held is what each worker holds at the end of its round, carried
	// into its next round and, after the last, to the drain.
	held [stressWorkers][]stressClaim
}

// stressClaim is an attempt a worker holds.
type stressClaim struct {
	task  *imagegen.Task
	short bool // on stressShortLease: may run out, and be recovered
}

func newStressRun(t *testing.T, h Harness) *stressRun {
	st := &stressRun{t: t, h: h, s: h.Store, log: newStressLog()}
	for _, o := range stressOwners {
		st.grant(o, 20)
	}
	entries, err := st.s.Ledger(ctx, stressOwners[0])
	if err != nil || len(entries) != 1 {
		t.Fatalf("ledger of %s: %d entries, %v", stressOwners[0], len(entries), err)
	}
	st.base = entries[0].At
	return st
}

func (st *stressRun) now() time.Time { return st.base.Add(st.elapsed) }

func (st *stressRun) grant(owner string, n int64) {
	ref := fmt.Sprintf("grant:stress-%d", taskSeq.Add(1))
	if _, err := st.s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: n, Ref: ref}); err != nil {
		st.log.failf("grant %d to %s: %v", n, owner, err)
		return
	}
	st.log.mu.Lock()
	st.log.grants[owner] += n
	st.log.mu.Unlock()
}

// work is worker w's part of round: stressSteps random operations,
// seeded by round and w.
func (st *stressRun) work(round, w int) {
	r := rand.New(rand.NewPCG(uint64(round)+1, uint64(w)+1))
	held := st.held[w]
	defer func() { st.held[w] = held }()
	for range stressSteps {
		switch k := r.IntN(20); {
		case k < 4:
			st.submit(r)
		case k < 5:
			st.grant(stressOwners[r.IntN(len(stressOwners))], 1+r.Int64N(4))
		case k < 9 || (k < 16 && len(held) == 0):
			held = append(held, st.claim(r)...)
		case k < 16:
			i := r.IntN(len(held))
			st.settle(r, held[i])
			held = append(held[:i], held[i+1:]...)
		case k < 18:
			st.cancel(r)
		default:
			if w == 0 { // the one goroutine that moves the clock
				d := time.Duration(1+r.IntN(4)) * time.Second
				st.h.Advance(d)
				st.elapsed += d
			}
			st.recover()
		}
	}
}

func (st *stressRun) submit(r *rand.Rand) {
	owner := stressOwners[r.IntN(len(stressOwners))]
	task := newTask(owner, 1+r.Int64N(3))
	task.Model = stressModels[r.IntN(len(stressModels))]
	st.log.submitting(task)
	_, err := st.s.CreateTask(ctx, task, imagegen.CreateParams{})
	switch {
	case err == nil:
		st.log.create(task)
	case errors.Is(err, imagegen.ErrInsufficientCredits):
		st.log.refuse(task)
	default:
		st.log.failf("create %s: %v", task.ID, err)
	}
}

// claim claims 1 to 3 tasks under stressLimits, on a short lease one
// time in five, and checks them in.
func (st *stressRun) claim(r *rand.Rand) []stressClaim {
	short := r.IntN(5) == 0
	l := stressStoreLease(short)
	got, err := st.s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: l, N: 1 + r.IntN(3), Limits: stressLimits})
	if errors.Is(err, imagegen.ErrNoTask) {
		st.log.note("no task")
		return nil
	}
	if err != nil {
		st.log.failf("claim: %v", err)
		return nil
	}
	if len(got) == 0 {
		st.log.failf("claim: no task and no error")
	}
	out := make([]stressClaim, 0, len(got))
	for _, task := range got {
		out = append(out, stressClaim{task: task, short: short})
	}
	st.log.claimed(out, true, !st.h.Sharded)
	return out
}

func stressStoreLease(short bool) time.Duration {
	if short {
		return stressShortLease
	}
	return stressLongLease
}

// settle ends a held attempt: completes it (9 in 20), fails it (4),
// retries it with one of stressDelays (4) or releases it (3); an attempt
// on a short lease is walked away from half the time, to run out.
func (st *stressRun) settle(r *rand.Rand, c stressClaim) {
	if c.short && r.IntN(2) == 0 {
		st.log.note("walk away")
		return
	}
	id, attempt := c.task.ID, c.task.Attempt
	st.log.stopRunning(id, attempt) // before the call: the store may count it gone at once
	var how string
	var err error
	switch k := r.IntN(20); {
	case k < 9:
		how, err = "complete", st.s.CompleteTask(ctx, id, attempt, nil, nil)
	case k < 13:
		var refund int64
		how = "fail"
		if refund, err = st.s.FailTask(ctx, id, attempt, fail("stress")); err == nil {
			st.log.refunded(c.task, refund, how)
		}
	case k < 17:
		how, err = "retry", st.s.RetryTask(ctx, id, attempt, stressDelays[r.IntN(len(stressDelays))], "stress")
	default:
		how, err = "release", st.s.ReleaseTask(ctx, id, attempt)
	}
	st.log.settled(c, how, err)
}

// cancel cancels, as its owner, a task created so far, whatever its
// state.
func (st *stressRun) cancel(r *rand.Rand) {
	task := st.log.pick(r)
	if task == nil {
		return
	}
	st.log.doom(task.ID) // before the call, as settle's stopRunning
	refund, err := st.s.CancelTask(ctx, task.Owner, task.ID, imagegen.CancelParams{})
	switch {
	case err == nil:
		st.log.refunded(task, refund, "cancel")
	case errors.Is(err, imagegen.ErrInvalidTransition):
	default:
		st.log.failf("cancel %s: %v", task.ID, err)
	}
}

// recover recovers expired leases, as any process may at any time.
func (st *stressRun) recover() {
	rec, err := st.s.RecoverExpired(ctx, stressMaxAttempts)
	if err != nil {
		st.log.failf("recover: %v", err)
	}
	st.log.recovered(rec)
}

func (st *stressRun) reportFailures(when string) {
	st.t.Helper()
	st.log.mu.Lock()
	defer st.log.mu.Unlock()
	for _, f := range st.log.failures {
		st.t.Errorf("%s: %s", when, f)
	}
	if len(st.log.failures) > 0 {
		st.t.FailNow()
	}
}
