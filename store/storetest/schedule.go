package storetest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
	"github.com/matryer/is"
)

// submitModel creates n tasks of model for owner, a millisecond apart,
// granting their cost first, and returns their ids, oldest first.
func submitModel(t *testing.T, h Harness, owner, model string, n int) []string {
	t.Helper()
	grant(t, h.Store, owner, int64(n))
	ids := make([]string, 0, n)
	for range n {
		task := newTask(owner, 1)
		task.Model = model
		ids = append(ids, create(t, h.Store, task).ID)
		h.Advance(time.Millisecond)
	}
	return ids
}

// claimWith claims up to n tasks under l; none is an empty slice. A
// claim of none must say ErrNoTask, never an empty batch with no error.
func claimWith(t *testing.T, s imagegen.Store, n int, l imagegen.Limits) []*imagegen.Task {
	t.Helper()
	got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: n, Limits: l})
	if errors.Is(err, imagegen.ErrNoTask) {
		return nil
	}
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if len(got) == 0 {
		t.Fatal("claim: no task and no error; a claim of none returns ErrNoTask")
	}
	return got
}

// owners lists the owners of tasks, in order.
func owners(tasks []*imagegen.Task) []string {
	out := make([]string, len(tasks))
	for i, task := range tasks {
		out[i] = task.Owner
	}
	return out
}

// claimOne claims one task at a time, n times, and returns them.
func claimEach(t *testing.T, s imagegen.Store, n int) []*imagegen.Task {
	t.Helper()
	out := make([]*imagegen.Task, 0, n)
	for range n {
		out = append(out, claim(t, s))
	}
	return out
}

func count(names []string, name string) int {
	n := 0
	for _, x := range names {
		if x == name {
			n++
		}
	}
	return n
}

// testFairShare: owners take turns, whoever submitted first; within an
// owner, oldest first; a lone owner gets every claim.
func testFairShare(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	a := submitModel(t, h, "a", "test", 6)
	b := submitModel(t, h, "b", "test", 3)
	got := claimEach(t, s, 9)
	ids := make([]string, len(got))
	for i, task := range got {
		ids[i] = task.ID
	}
	is.Equal(ids, []string{a[0], b[0], a[1], b[1], a[2], b[2], a[3], a[4], a[5]})
	_, err := s.ClaimTask(ctx, lease)
	is.True(errors.Is(err, imagegen.ErrNoTask))
}

// testNewOwnerWaitsOneTurn: an owner's first task waits behind at most
// one turn of an owner with a long backlog, however long.
func testNewOwnerWaitsOneTurn(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	submitModel(t, h, "a", "test", 30)
	claimEach(t, s, 5)
	b := submitModel(t, h, "b", "test", 1)
	next := claimEach(t, s, 2)
	is.True(next[0].ID == b[0] || next[1].ID == b[0]) // within one turn of a
	is.Equal(count(owners(next), "a"), 1)
}

// testClaimTasksInterleavesOwners: one batch takes turns too.
func testClaimTasksInterleavesOwners(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	submitModel(t, h, "a", "test", 4)
	submitModel(t, h, "b", "test", 4)
	got := claimWith(t, s, 4, imagegen.Limits{})
	is.Equal(len(got), 4)
	is.Equal(count(owners(got), "a"), 2)
	is.Equal(count(owners(got), "b"), 2)
}

// testRecoveredTasksTakeTurns: tasks that one recovery sends back to
// the queue join their owner's line one after another, each a turn of
// its own (docs/scheduling.md: a task queued while its owner has
// pending tasks is tagged after the owner's last), so the owner whose
// leases ran out takes turns with the others rather than running them
// all first.
func testRecoveredTasksTakeTurns(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	submitModel(t, h, "a", "test", 3)
	is.Equal(count(owners(claimEach(t, s, 3)), "a"), 3)
	submitModel(t, h, "b", "test", 3)
	h.Advance(2 * lease)
	is.Equal(recoverNow(t, s, 5).Requeued, 3)
	got := owners(claimEach(t, s, 6))
	for i := 0; i < len(got); i += 2 {
		is.Equal(count(got[i:i+2], "a"), 1) // every turn takes one of each: a b a b a b (or b a ...)
	}
}

// testRetriedTaskKeepsItsTurn: a task waiting out its retry delay,
// alone in the queue while nothing runs, keeps its place in the turns:
// an owner who submits meanwhile gets one turn before it at most, not
// its whole backlog (docs/scheduling.md: owners with ready tasks take
// turns, and a new owner's first task waits behind one turn of the
// others).
func testRetriedTaskKeepsItsTurn(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	// Some work served first, so that tags have moved on; b's task is
	// retried while a's last one runs.
	a := submitModel(t, h, "a", "test", 4)
	for range 3 {
		task := claim(t, s)
		is.NoErr(s.CompleteTask(ctx, task.ID, task.Attempt, nil, nil))
	}
	b := submitModel(t, h, "b", "test", 1)
	last, task := claim(t, s), claim(t, s)
	is.Equal(last.ID, a[3])
	is.Equal(task.ID, b[0])
	is.NoErr(s.RetryTask(ctx, task.ID, task.Attempt, time.Minute, "try again"))
	is.NoErr(s.CompleteTask(ctx, last.ID, last.Attempt, nil, nil))
	// Nothing runs; b's task waits out its delay. c submits a backlog.
	submitModel(t, h, "c", "test", 4)
	h.Advance(time.Minute)
	got := owners(claimEach(t, s, 5))
	is.Equal(count(got[:2], "b"), 1) // b's retried task within one turn of c's
}

// testLongRunningTaskKeepsNoOneBack: an old task still running (a slow
// generation, claimed long before) does not send an owner who submits
// now ahead of the owners already waiting: its first task waits behind
// one turn of theirs, and then they take turns (docs/scheduling.md).
func testLongRunningTaskKeepsNoOneBack(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	a := submitModel(t, h, "a", "test", 1)
	slow := claim(t, s)
	is.Equal(slow.ID, a[0]) // runs on, its lease held, to the end
	submitModel(t, h, "c", "test", 6)
	for range 3 {
		task := claim(t, s)
		is.Equal(task.Owner, "c")
		is.NoErr(s.CompleteTask(ctx, task.ID, task.Attempt, nil, nil))
	}
	submitModel(t, h, "b", "test", 3)
	got := owners(claimEach(t, s, 6))
	for i := 0; i < len(got); i += 2 {
		is.Equal(count(got[i:i+2], "b"), 1) // b and c take turns
	}
}

// testOwnerWeights: weight 3 gets about three turns for one; the weight
// is kept by the store and checked.
func testOwnerWeights(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	w, err := s.OwnerWeight(ctx, "heavy")
	is.NoErr(err)
	is.Equal(w, 1) // the default
	is.NoErr(s.SetOwnerWeight(ctx, "heavy", 3))
	w, err = s.OwnerWeight(ctx, "heavy")
	is.NoErr(err)
	is.Equal(w, 3)
	for _, bad := range []int{0, -1, imagegen.MaxOwnerWeight + 1} {
		is.True(errors.Is(s.SetOwnerWeight(ctx, "heavy", bad), storekit.ErrInvalidStoreInput))
	}
	is.True(errors.Is(s.SetOwnerWeight(ctx, "", 2), storekit.ErrInvalidStoreInput))

	submitModel(t, h, "heavy", "test", 12)
	submitModel(t, h, "light", "test", 12)
	first := owners(claimEach(t, s, 12))
	heavy := count(first, "heavy")
	is.True(heavy >= 8 && heavy <= 10) // 9 of 12 at 3:1
	is.True(count(first[:4], "light") >= 1)
}

// testOwnerCap: an owner at its cap is passed over (its tasks stay
// pending, no attempt counted) while others' run; every way out of
// processing gives the slot back, so does an ended lease, and a late
// finish frees nothing.
func testOwnerCap(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	capped := imagegen.Limits{OwnerConcurrency: 1}
	a := submitModel(t, h, "a", "test", 8)
	submitModel(t, h, "b", "test", 1)
	got := claimWith(t, s, 4, capped)
	is.Equal(owners(got), []string{"a", "b"})
	is.NoErr(s.CompleteTask(ctx, got[1].ID, got[1].Attempt, nil, nil))
	is.Equal(len(claimWith(t, s, 4, capped)), 0)
	held := get(t, s, "a", a[1])
	is.Equal(held.Status, imagegen.StatusPending)
	is.Equal(held.Attempt, 0)
	stats, err := s.SchedulerStats(ctx, capped)
	is.NoErr(err)
	is.Equal(stats.Held[imagegen.HeldOwnerCap], 7)
	is.Equal(stats.Busiest[0], imagegen.OwnerLoad{Owner: "a", Pending: 7, Running: 1})

	claimA := func() *imagegen.Task {
		t.Helper()
		got := claimWith(t, s, 4, capped)
		if len(got) != 1 || got[0].Owner != "a" {
			t.Fatalf("claimed %v, want one task of a", owners(got))
		}
		return got[0]
	}
	cur := got[0]
	is.NoErr(s.CompleteTask(ctx, cur.ID, cur.Attempt, nil, nil))
	cur = claimA()
	is.NoErr(s.RetryTask(ctx, cur.ID, cur.Attempt, 0, "again"))
	cur = claimA()
	is.NoErr(s.ReleaseTask(ctx, cur.ID, cur.Attempt))
	cur = claimA()
	is.NoErr(errOf(s.FailTask(ctx, cur.ID, cur.Attempt, fail("no"))))
	cur = claimA()
	is.NoErr(errOf(s.CancelTask(ctx, "a", cur.ID, imagegen.CancelParams{})))
	cur = claimA()
	h.Advance(lease) // its worker died: the slot comes back with the lease
	next := claimA()
	recoverNow(t, s, 10) // cur goes back to the queue
	err = s.CompleteTask(ctx, cur.ID, cur.Attempt, nil, nil)
	is.True(errors.Is(err, imagegen.ErrLeaseLost))
	is.Equal(len(claimWith(t, s, 4, capped)), 0) // next still holds a's one slot
	is.NoErr(s.CompleteTask(ctx, next.ID, next.Attempt, nil, nil))
	is.Equal(len(claimWith(t, s, 4, capped)), 1)
}

// testModelCap: a model at its cap is passed over; other models' tasks
// start beside it; the slot comes back with a finish or an ended lease.
func testModelCap(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	l := imagegen.Limits{ModelConcurrency: map[string]int{"m1": 1}}
	submitModel(t, h, "a", "m1", 3)
	submitModel(t, h, "b", "m1", 1)
	submitModel(t, h, "b", "m2", 1)
	got := claimWith(t, s, 5, l)
	is.Equal(len(got), 2)
	models := map[string]*imagegen.Task{}
	for _, task := range got {
		models[task.Model] = task
	}
	is.True(models["m1"] != nil && models["m2"] != nil)
	is.Equal(len(claimWith(t, s, 5, l)), 0)
	stats, err := s.SchedulerStats(ctx, l)
	is.NoErr(err)
	is.Equal(stats.Held[imagegen.HeldModelCap], 3)
	is.NoErr(s.CompleteTask(ctx, models["m1"].ID, models["m1"].Attempt, nil, nil))
	got = claimWith(t, s, 5, l)
	is.Equal(len(got), 1)
	is.Equal(got[0].Model, "m1")
	h.Advance(lease)
	is.Equal(len(claimWith(t, s, 5, l)), 1) // the lease ended: its slot is free
}

// testCapsCountUncappedClaims: a task claimed by a claimer with no caps
// (another process's configuration, or this one's before a restart)
// counts against the caps of the claimers that have them, through a
// renewal and until it finishes; stats count it too.
func testCapsCountUncappedClaims(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	submitModel(t, h, "a", "m", 2)
	first := claimWith(t, s, 1, imagegen.Limits{})
	is.Equal(len(first), 1)
	stats, err := s.SchedulerStats(ctx, imagegen.Limits{})
	is.NoErr(err)
	is.Equal(stats.Busiest[0], imagegen.OwnerLoad{Owner: "a", Pending: 1, Running: 1})

	for name, l := range map[string]imagegen.Limits{
		"owner cap": {OwnerConcurrency: 1},
		"model cap": {ModelConcurrency: map[string]int{"m": 1}},
	} {
		if got := claimWith(t, s, 2, l); len(got) != 0 {
			t.Fatalf("%s: claimed %v beside the task claimed without caps", name, owners(got))
		}
	}
	h.Advance(lease / 2)
	is.NoErr(s.RenewLease(ctx, first[0].ID, first[0].Attempt, lease))
	h.Advance(lease/2 + time.Second) // past the first lease, within the renewed one
	for name, l := range map[string]imagegen.Limits{
		"owner cap": {OwnerConcurrency: 1},
		"model cap": {ModelConcurrency: map[string]int{"m": 1}},
	} {
		if got := claimWith(t, s, 2, l); len(got) != 0 {
			t.Fatalf("%s after a renewal: claimed %v beside the running task", name, owners(got))
		}
	}
	is.NoErr(s.CompleteTask(ctx, first[0].ID, first[0].Attempt, nil, nil))
	got := claimWith(t, s, 2, imagegen.Limits{OwnerConcurrency: 1, ModelConcurrency: map[string]int{"m": 1}})
	is.Equal(len(got), 1) // the finish gave both slots back
}

// testRacingClaimers: three claimers at once never run more than the
// caps allow, and every task runs once.
func testRacingClaimers(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	const ownerCap, modelCap, perOwner = 2, 3, 6
	l := imagegen.Limits{OwnerConcurrency: ownerCap, ModelConcurrency: map[string]int{"m": modelCap}}
	names := []string{"a", "b", "c", "d"}
	for _, o := range names {
		submitModel(t, h, o, "m", perOwner)
	}
	var (
		mu        sync.Mutex
		byOwner   = map[string]int{}
		all       int
		done      atomic.Int64
		violation atomic.Value
		wg        sync.WaitGroup
	)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				if done.Load() == int64(len(names)*perOwner) {
					return
				}
				got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 2, Limits: l})
				if errors.Is(err, imagegen.ErrNoTask) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					violation.Store("claim: " + err.Error())
					return
				}
				if len(got) == 0 {
					violation.Store("claim: no task and no error")
					return
				}
				mu.Lock()
				for _, task := range got {
					byOwner[task.Owner]++
					all++
					if byOwner[task.Owner] > ownerCap || all > modelCap {
						violation.Store("a cap was exceeded")
					}
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
				for _, task := range got {
					mu.Lock()
					byOwner[task.Owner]--
					all--
					mu.Unlock()
					if err := s.CompleteTask(ctx, task.ID, task.Attempt, nil, nil); err != nil {
						violation.Store("complete: " + err.Error())
					}
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	is.Equal(violation.Load(), nil)
	is.Equal(done.Load(), int64(len(names)*perOwner))
}

// testModelRate: a rate of N a minute starts one task every minute/N.
func testModelRate(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	l := imagegen.Limits{ModelRate: map[string]int{"m": 2}}
	submitModel(t, h, "a", "m", 4)
	is.Equal(len(claimWith(t, s, 4, l)), 1)
	is.Equal(len(claimWith(t, s, 4, l)), 0)
	stats, err := s.SchedulerStats(ctx, l)
	is.NoErr(err)
	is.Equal(stats.Held[imagegen.HeldModelRate], 3)
	h.Advance(30 * time.Second)
	is.Equal(len(claimWith(t, s, 4, l)), 1)
	h.Advance(29 * time.Second)
	is.Equal(len(claimWith(t, s, 4, l)), 0)
	h.Advance(time.Second)
	is.Equal(len(claimWith(t, s, 4, l)), 1)
}

// testModelPause: a pause holds back the model's starts for everyone,
// whatever limits they claim with, and never shortens.
func testModelPause(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	submitModel(t, h, "a", "m", 2)
	other := submitModel(t, h, "a", "other", 1)
	is.NoErr(s.PauseModel(ctx, "m", 10*time.Second))
	is.NoErr(s.PauseModel(ctx, "m", time.Second)) // shorter: changes nothing
	stats, err := s.SchedulerStats(ctx, imagegen.Limits{})
	is.NoErr(err)
	is.True(!stats.Paused["m"].IsZero())
	got := claimWith(t, s, 4, imagegen.Limits{})
	is.Equal(len(got), 1)
	is.Equal(got[0].ID, other[0])
	h.Advance(9 * time.Second)
	is.Equal(len(claimWith(t, s, 4, imagegen.Limits{})), 0)
	h.Advance(time.Second)
	is.Equal(len(claimWith(t, s, 4, imagegen.Limits{})), 2)
}

// testPausedModelListed: SchedulerStats lists a paused model that has
// no task queued and that the limits do not name, until its pause ends.
// (The Redis store listed only the models of queued tasks or of the
// limits; RandomOperationsAgreeWithModel found it, seed 1.)
func testPausedModelListed(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	is.NoErr(s.PauseModel(ctx, "idle", 2*time.Second))
	stats, err := s.SchedulerStats(ctx, imagegen.Limits{})
	is.NoErr(err)
	is.True(!stats.Paused["idle"].IsZero())
	is.NoErr(s.PauseModel(ctx, "idle", time.Second)) // shorter: changes nothing
	h.Advance(time.Second)
	stats, err = s.SchedulerStats(ctx, imagegen.Limits{})
	is.NoErr(err)
	is.True(!stats.Paused["idle"].IsZero())
	h.Advance(time.Second)
	stats, err = s.SchedulerStats(ctx, imagegen.Limits{})
	is.NoErr(err)
	_, paused := stats.Paused["idle"]
	is.True(!paused) // ended
}

// testMaxPending: a submit beyond the owner's pending cap is refused
// and charges nothing; other owners are unaffected; a claim makes room.
func testMaxPending(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	p := imagegen.CreateParams{MaxPending: 2}
	grant(t, s, "a", 5)
	grant(t, s, "b", 1)
	for range 2 {
		_, err := s.CreateTask(ctx, newTask("a", 1), p)
		is.NoErr(err)
	}
	full := newTask("a", 1)
	_, err := s.CreateTask(ctx, full, p)
	is.True(errors.Is(err, imagegen.ErrQueueFull))
	is.Equal(balance(t, s, "a"), int64(3))
	is.Equal(len(checkLedger(t, s, "a")), 3) // the grant and two charges
	_, err = s.Task(ctx, "a", full.ID)
	is.True(errors.Is(err, imagegen.ErrTaskNotFound))
	_, err = s.CreateTask(ctx, newTask("b", 1), p)
	is.NoErr(err)
	claim(t, s)
	_, err = s.CreateTask(ctx, newTask("a", 1), p)
	is.NoErr(err)
}
