package storetest

import (
	"errors"
	"slices"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// readAll reads every task the case created, by id.
func (st *stressRun) readAll() map[string]*imagegen.Task {
	st.t.Helper()
	out := make(map[string]*imagegen.Task, len(st.log.created))
	for _, c := range st.log.created {
		task, err := st.s.TaskByID(ctx, c.ID)
		if err != nil {
			st.t.Fatalf("task %s: %v", c.ID, err)
		}
		out[c.ID] = task
	}
	return out
}

// explain checks that task's state is one the calls that succeeded on it
// explain: a finished task ended by exactly one call (or recovery) of
// its kind, one still queued or running by none.
func (st *stressRun) explain(when string, task *imagegen.Task) {
	st.t.Helper()
	endings := st.log.endings[task.ID]
	var want string
	switch {
	case task.Status == imagegen.StatusSuccess:
		want = "complete"
	case task.Status == imagegen.StatusFailed && task.ErrorCode == imagegen.CodeProviderError:
		want = "fail"
	case task.Status == imagegen.StatusFailed && task.ErrorCode == imagegen.CodeCancelled:
		want = "cancel"
	case task.Status == imagegen.StatusFailed && task.ErrorCode == imagegen.CodeInternal && task.Error == storekit.ExpiredLeaseMessage(task.CountedAttempts()):
		want = "recovery"
	case task.Status == imagegen.StatusPending || task.Status == imagegen.StatusProcessing:
		if len(endings) != 0 {
			st.t.Errorf("%s: %s is %s, yet %v ended it", when, task.ID, task.Status, endings)
		}
		return
	default:
		st.t.Errorf("%s: %s is %s (%s: %s), which no call of the case explains", when, task.ID, task.Status, task.ErrorCode, task.Error)
		return
	}
	if !slices.Equal(endings, []string{want}) {
		st.t.Errorf("%s: %s is %s (%s), ended by %v; want exactly one %s", when, task.ID, task.Status, task.ErrorCode, endings, want)
	}
}

// checkpoint checks the store at rest (no goroutine running) against
// its tasks: each task's state, QueueStats, SchedulerStats under
// stressLimits and the balances.
func (st *stressRun) checkpoint(when string) map[string]*imagegen.Task {
	st.t.Helper()
	tasks := st.readAll()
	now := st.now()
	var pending, processing, lapsed int
	ownerPending, ownerRun, modelRun := map[string]int{}, map[string]int{}, map[string]int{}
	for _, c := range st.log.created {
		task := tasks[c.ID]
		st.explain(when, task)
		switch task.Status {
		case imagegen.StatusPending:
			pending++
			ownerPending[task.Owner]++
		case imagegen.StatusProcessing:
			processing++
			if task.LeaseUntil.After(now) {
				ownerRun[task.Owner]++
				modelRun[task.Model]++
			} else {
				lapsed++
			}
		}
	}
	qs, err := st.s.QueueStats(ctx)
	if err != nil {
		st.t.Fatalf("%s: queue stats: %v", when, err)
	}
	if qs.Pending != int64(pending) || (lapsed == 0 && qs.Processing != int64(processing)) {
		st.t.Errorf("%s: queue stats say %d pending, %d processing; the tasks %d, %d (%d of them on a lapsed lease)",
			when, qs.Pending, qs.Processing, pending, processing, lapsed)
	}
	if !st.h.Sharded {
		st.checkSchedulerStats(when, tasks, ownerPending, ownerRun, modelRun)
	}
	st.checkBalances(when, tasks)
	return tasks
}

// checkSchedulerStats checks SchedulerStats under stressLimits: every
// owner with pending tasks among the busiest, with its pending and live
// running counts; each ready task held back by a cap its owner or model
// is at (one held by both may be counted under either).
func (st *stressRun) checkSchedulerStats(when string, tasks map[string]*imagegen.Task, ownerPending, ownerRun, modelRun map[string]int) {
	st.t.Helper()
	stats, err := st.s.SchedulerStats(ctx, stressLimits)
	if err != nil {
		st.t.Fatalf("%s: scheduler stats: %v", when, err)
	}
	for _, o := range stressOwners {
		want := imagegen.OwnerLoad{Owner: o, Pending: ownerPending[o], Running: ownerRun[o]}
		i := slices.IndexFunc(stats.Busiest, func(l imagegen.OwnerLoad) bool { return l.Owner == o })
		switch {
		case i >= 0 && stats.Busiest[i] != want:
			st.t.Errorf("%s: scheduler stats: busiest %+v, the tasks say %+v", when, stats.Busiest[i], want)
		case i < 0 && want.Pending > 0:
			st.t.Errorf("%s: scheduler stats: %s, with %d pending, is not among the busiest %+v", when, o, want.Pending, stats.Busiest)
		}
	}
	tally := newHeldTally()
	now := st.now()
	for _, task := range tasks {
		if task.Status != imagegen.StatusPending || task.RunAfter.After(now) {
			continue
		}
		var why []imagegen.HoldReason
		if ownerRun[task.Owner] >= stressLimits.OwnerConcurrency {
			why = append(why, imagegen.HeldOwnerCap)
		}
		if modelRun[task.Model] >= stressLimits.ModelConcurrency[task.Model] {
			why = append(why, imagegen.HeldModelCap)
		}
		tally.add(why)
	}
	tally.outside(stats.Held, func(r imagegen.HoldReason, n, lo, hi int) {
		st.t.Errorf("%s: scheduler stats: %d held by %s, the tasks say %d to %d (held %v)", when, n, r, lo, hi, stats.Held)
	})
}

// checkBalances checks each owner's balance: its grants less the cost of
// its tasks not failed (every failed task refunded, once, by the call
// that failed it); its ledger sums to it.
func (st *stressRun) checkBalances(when string, tasks map[string]*imagegen.Task) {
	st.t.Helper()
	charged, failed := map[string]int64{}, map[string]int64{}
	for _, task := range tasks {
		if task.Status == imagegen.StatusFailed {
			failed[task.Owner] += task.Cost
		} else {
			charged[task.Owner] += task.Cost
		}
	}
	for _, o := range stressOwners {
		if got, want := balance(st.t, st.s, o), st.log.grants[o]-charged[o]; got != want {
			st.t.Errorf("%s: %s's balance is %d; granted %d, charged %d for tasks not failed: want %d", when, o, got, st.log.grants[o], charged[o], want)
		}
		if st.log.refunds[o] != failed[o] {
			st.t.Errorf("%s: the calls refunded %s %d, its failed tasks cost %d", when, o, st.log.refunds[o], failed[o])
		}
		checkLedger(st.t, st.s, o)
	}
}

// drain ends the run: completes what the workers still hold, moves the
// clock past every lease and retry delay, recovers, and claims with no
// limits until ErrNoTask, completing each task: each one pending before
// the drain claimed once.
func (st *stressRun) drain() {
	st.t.Helper()
	for w := range st.held {
		for _, c := range st.held[w] {
			st.log.stopRunning(c.task.ID, c.task.Attempt)
			st.log.settled(c, "complete", st.s.CompleteTask(ctx, c.task.ID, c.task.Attempt, nil, nil))
		}
		st.held[w] = nil
	}
	st.h.Advance(stressDrainStep)
	st.elapsed += stressDrainStep
	st.recover()
	st.reportFailures("settling the held attempts")
	tasks := st.checkpoint("before the drain")
	left := map[string]bool{}
	for id, task := range tasks {
		switch task.Status {
		case imagegen.StatusPending:
			left[id] = true
		case imagegen.StatusProcessing:
			st.t.Errorf("%s still processing after every attempt was completed or its lease ran out and a recovery", id)
		}
	}
	pending := len(left)
	for range pending + 2 {
		got, err := st.s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: stressLongLease, N: 8})
		if errors.Is(err, imagegen.ErrNoTask) {
			break
		}
		if err != nil {
			st.t.Fatalf("drain: claim: %v", err)
		}
		claims := make([]stressClaim, len(got))
		for i, task := range got {
			if !left[task.ID] {
				st.t.Errorf("drain: claimed %s (%s before the drain), not a pending task left to claim", task.ID, tasks[task.ID].Status)
			}
			delete(left, task.ID)
			claims[i] = stressClaim{task: task}
		}
		st.log.claimed(claims, false, false)
		for _, c := range claims {
			st.log.settled(c, "complete", st.s.CompleteTask(ctx, c.task.ID, c.task.Attempt, nil, nil))
		}
	}
	for id := range left {
		t := tasks[id]
		st.t.Errorf("drain: %s of %s (model %s, attempt %d), pending before the drain, was never claimed", id, t.Owner, t.Model, t.Attempt)
	}
	st.t.Logf("the drain claimed %d tasks", pending-len(left))
	st.reportFailures("the drain")
}

// checkFinal checks the store once drained: every task finished, as a
// call explains, the queue empty, each task's charge in its owner's
// ledger once and its refund once if it failed, never if it succeeded;
// tasks refused do not exist and cost nothing.
func (st *stressRun) checkFinal() {
	st.t.Helper()
	tasks := st.checkpoint("after the drain")
	for id, task := range tasks {
		if task.Status != imagegen.StatusSuccess && task.Status != imagegen.StatusFailed {
			st.t.Errorf("after the drain: %s is %s", id, task.Status)
		}
	}
	qs, err := st.s.QueueStats(ctx)
	if err != nil {
		st.t.Fatalf("queue stats: %v", err)
	}
	if qs.Pending != 0 || qs.Processing != 0 {
		st.t.Errorf("after the drain: queue stats %+v", qs)
	}
	for _, o := range stressOwners {
		entries := checkLedger(st.t, st.s, o)
		for id, task := range tasks {
			if task.Owner != o {
				continue
			}
			refunds := 0
			if task.Status == imagegen.StatusFailed {
				refunds = 1
			}
			if n, m := countRefs(entries, imagegen.ChargeRef(id)), countRefs(entries, imagegen.RefundRef(id)); n != 1 || m != refunds {
				st.t.Errorf("%s (%s): %d charges and %d refunds in the ledger, want 1 and %d", id, task.Status, n, m, refunds)
			}
		}
	}
	for _, id := range st.log.refusedIDs {
		if _, err := st.s.TaskByID(ctx, id); !errors.Is(err, imagegen.ErrTaskNotFound) {
			st.t.Errorf("%s, refused for want of credits: TaskByID says %v, want ErrTaskNotFound", id, err)
		}
	}
	for _, o := range stressOwners {
		entries := checkLedger(st.t, st.s, o)
		for _, id := range st.log.refusedIDs {
			if countRefs(entries, imagegen.ChargeRef(id)) != 0 {
				st.t.Errorf("%s, refused for want of credits, is charged in %s's ledger", id, o)
			}
		}
	}
}
