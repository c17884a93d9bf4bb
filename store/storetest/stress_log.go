package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/imagegen/imagegen"
)

// stressLog is what the goroutines of ConcurrentStressKeepsTheRules were
// told by the store, and the checks made as they were told it.
type stressLog struct {
	mu sync.Mutex
	// created are the tasks CreateTask took, in order; byID those too
	// by id, and those whose CreateTask is under way; refusedIDs the
	// ones it refused for want of credits.
	created    []*imagegen.Task
	byID       map[string]*imagegen.Task
	refusedIDs []string
	refused    int
	grants     map[string]int64 // per owner
	refunds    map[string]int64 // per owner, as the calls reported them
	// running are the attempts the test knows hold their task now: on a
	// long lease, claimed (the claim returned) and not yet ended (the
	// call that ends them not yet made), no cancel made of their task.
	// By task id.
	running map[string]runningAttempt
	// doomed are the tasks a cancel was made of: from then on their
	// attempts may be told their lease is lost, and none counts as
	// running.
	doomed map[string]bool
	// attempts are the attempts claims have returned, per task.
	attempts map[string]map[int]bool
	// endings are the calls (complete, fail, cancel) that ended each
	// task, and the recoveries that reported failing it.
	endings  map[string][]string
	count    map[string]int // operations that took effect, by kind
	claims   int
	failures []string
}

type runningAttempt struct {
	attempt      int
	owner, model string
}

func newStressLog() *stressLog {
	return &stressLog{
		byID: map[string]*imagegen.Task{}, grants: map[string]int64{}, refunds: map[string]int64{},
		running: map[string]runningAttempt{}, doomed: map[string]bool{}, attempts: map[string]map[int]bool{},
		endings: map[string][]string{}, count: map[string]int{},
	}
}

// failf notes a broken rule; the test reports them after the round.
func (l *stressLog) failf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failLocked(format, args...)
}

func (l *stressLog) failLocked(format string, args ...any) {
	if len(l.failures) < 30 {
		l.failures = append(l.failures, fmt.Sprintf(format, args...))
	}
}

func (l *stressLog) note(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count[kind]++
}

// submitting notes task before its CreateTask is made: a claim may
// return it before the call does.
func (l *stressLog) submitting(task *imagegen.Task) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byID[task.ID] = task
}

func (l *stressLog) create(task *imagegen.Task) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.created = append(l.created, task)
}

func (l *stressLog) refuse(task *imagegen.Task) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byID, task.ID)
	l.refused++
	l.refusedIDs = append(l.refusedIDs, task.ID)
}

// pick returns a task created so far, or nil.
func (l *stressLog) pick(r *rand.Rand) *imagegen.Task {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.created) == 0 {
		return nil
	}
	return l.created[r.IntN(len(l.created))]
}

// claimed checks in the attempts one claim returned. Under caps (capped)
// it counts those on a long lease as running, and checks that no owner
// and, unless the store is sharded (checkModels false), no model runs
// more than stressLimits allow.
func (l *stressLog) claimed(got []stressClaim, capped, checkModels bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.claims++
	for _, c := range got {
		task := c.task
		if l.byID[task.ID] == nil {
			l.failLocked("claimed %s, a task never created", task.ID)
			continue
		}
		if task.Status != imagegen.StatusProcessing || task.Attempt < 1 {
			l.failLocked("claimed %s as %s at attempt %d", task.ID, task.Status, task.Attempt)
		}
		seen := l.attempts[task.ID]
		if seen == nil {
			seen = map[int]bool{}
			l.attempts[task.ID] = seen
		}
		if seen[task.Attempt] {
			l.failLocked("%s handed out twice at attempt %d", task.ID, task.Attempt)
		}
		seen[task.Attempt] = true
		if held, ok := l.running[task.ID]; ok {
			l.failLocked("%s claimed at attempt %d while attempt %d, on a live lease, still holds it", task.ID, task.Attempt, held.attempt)
		}
		if capped && !c.short && !l.doomed[task.ID] {
			l.running[task.ID] = runningAttempt{attempt: task.Attempt, owner: task.Owner, model: task.Model}
		}
	}
	if !capped {
		return
	}
	owners, models := map[string]int{}, map[string]int{}
	for _, a := range l.running {
		owners[a.owner]++
		models[a.model]++
	}
	for o, n := range owners {
		if n > stressLimits.OwnerConcurrency {
			l.failLocked("owner %s runs %d tasks, its cap is %d (a claim just returned %s)", o, n, stressLimits.OwnerConcurrency, claimedIDs(got))
		}
	}
	for m, n := range models {
		if c := stressLimits.ModelConcurrency[m]; checkModels && n > c {
			l.failLocked("model %s runs %d tasks, its cap is %d (a claim just returned %s)", m, n, c, claimedIDs(got))
		}
	}
}

func claimedIDs(got []stressClaim) []string {
	ids := make([]string, len(got))
	for i, c := range got {
		ids[i] = fmt.Sprintf("%s#%d", c.task.ID, c.task.Attempt)
	}
	return ids
}

// stopRunning stops counting attempt of task id as running: its ending
// call is about to be made.
func (l *stressLog) stopRunning(id string, attempt int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a, ok := l.running[id]; ok && a.attempt == attempt {
		delete(l.running, id)
	}
}

// doom notes that a cancel of task id is about to be made.
func (l *stressLog) doom(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.doomed[id] = true
	delete(l.running, id)
}

// settled checks what the call how (complete, fail, retry, release) of
// c's attempt answered. Only an attempt on a short lease, or of a task
// someone cancelled, may have lost its lease.
func (l *stressLog) settled(c stressClaim, how string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id, attempt := c.task.ID, c.task.Attempt
	switch {
	case err == nil:
		l.count[how]++
		if how == "complete" || how == "fail" {
			l.endings[id] = append(l.endings[id], how)
		}
	case errors.Is(err, imagegen.ErrLeaseLost):
		l.count["lost"]++
		if !c.short && !l.doomed[id] {
			l.failLocked("%s of %s at attempt %d: the lease, long and never cancelled, was lost", how, id, attempt)
		}
	default:
		l.failLocked("%s of %s at attempt %d: %v", how, id, attempt, err)
	}
}

// refunded notes a refund a call reported (how: fail or cancel): the
// task's cost, since no task of the case is ever refunded before.
func (l *stressLog) refunded(task *imagegen.Task, refund int64, how string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if refund != task.Cost {
		l.failLocked("%s of %s refunded %d, its cost is %d", how, task.ID, refund, task.Cost)
	}
	l.refunds[task.Owner] += refund
	if how == "cancel" {
		l.count[how]++
		l.endings[task.ID] = append(l.endings[task.ID], how)
	}
}

// recovered notes what a RecoverExpired reported.
func (l *stressLog) recovered(rec imagegen.Recovery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count["requeued"] += rec.Requeued
	for _, f := range rec.Failed {
		task := l.byID[f.ID]
		if task == nil || f.Owner != task.Owner || f.Cost != task.Cost || f.Refund != task.Cost || f.Attempts < stressMaxAttempts {
			l.failLocked("recovery failed %+v, created as %+v", f, task)
			continue
		}
		l.refunds[f.Owner] += f.Refund
		l.count["recovery"]++
		l.endings[f.ID] = append(l.endings[f.ID], "recovery")
	}
}
