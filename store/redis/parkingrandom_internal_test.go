package redis

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// parkingWorld drives a store with random submits, claims under mixed
// caps, endings, retries, releases, cancels, requeues, pauses and
// lease expiries, and checks after each step that every pending task
// is in exactly one queue (its model's, its owner's parked queue of the
// model, listed as parked, or the legacy one), that no queue holds a
// task that is not pending, and that each owner's count of pending
// tasks is right.
type parkingWorld struct {
	t      *testing.T
	s      *Store
	clock  *imagegentest.Clock
	rng    *rand.Rand
	owners []string
	models []string
	tasks  map[string][2]string // id → owner, model
	order  []string             // ids in submission order
	first  map[string][]string  // owner/model → ids in the order of their first claims
	seen   map[string]bool      // ids claimed at least once
	again  map[string]bool      // ids requeued (a new tag)
	trace  []string             // every claim's ids
	n      int
	many   bool // step as many owners at their caps
}

func (w *parkingWorld) ctx() context.Context { return context.Background() }

func (w *parkingWorld) submit() {
	owner := w.owners[w.rng.IntN(len(w.owners))]
	model := w.models[w.rng.IntN(len(w.models))]
	w.n++
	id := fmt.Sprintf("t%05d-%s-%s", w.n, owner, model)
	task := &imagegen.Task{ID: id, Owner: owner, Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: model, Cost: 1}
	if _, err := w.s.CreateTask(w.ctx(), task, imagegen.CreateParams{}); err != nil {
		w.t.Fatal(err)
	}
	w.tasks[id] = [2]string{owner, model}
	w.order = append(w.order, id)
}

func (w *parkingWorld) claim(capN int, n int, l imagegen.Limits) []*imagegen.Task {
	l.OwnerConcurrency = capN
	got, err := w.s.ClaimTasks(w.ctx(), imagegen.ClaimParams{Lease: 30 * time.Second, N: n, Limits: l})
	if err != nil && !errors.Is(err, imagegen.ErrNoTask) {
		w.t.Fatal(err)
	}
	w.trace = append(w.trace, fmt.Sprint(ids(got)))
	for _, task := range got {
		if !w.seen[task.ID] && !w.again[task.ID] {
			w.seen[task.ID] = true
			k := task.Owner + "/" + task.Model
			w.first[k] = append(w.first[k], task.ID)
		}
	}
	return got
}

// withStatus is every task of status st.
func (w *parkingWorld) withStatus(st imagegen.Status) []*imagegen.Task {
	var out []*imagegen.Task
	for _, task := range w.all() {
		if task.Status == st {
			out = append(out, task)
		}
	}
	return out
}

// anyWith is a task of status st picked at random, or nil when none has it.
func (w *parkingWorld) anyWith(st imagegen.Status) *imagegen.Task {
	tasks := w.withStatus(st)
	if len(tasks) == 0 {
		return nil
	}
	return tasks[w.rng.IntN(len(tasks))]
}

// all reads every task's status and attempt, in one pipeline.
func (w *parkingWorld) all() []*imagegen.Task {
	pipe := w.s.rdb.Pipeline()
	cmds := make([]*goredis.SliceCmd, len(w.order))
	for i, id := range w.order {
		cmds[i] = pipe.HMGet(w.ctx(), w.s.k.task(id), "status", "attempt")
	}
	if _, err := pipe.Exec(w.ctx()); err != nil {
		w.t.Fatal(err)
	}
	out := make([]*imagegen.Task, len(w.order))
	for i, id := range w.order {
		v := cmds[i].Val()
		status, _ := v[0].(string)
		attempt, _ := v[1].(string)
		n, _ := strconv.Atoi(attempt)
		out[i] = &imagegen.Task{ID: id, Owner: w.tasks[id][0], Model: w.tasks[id][1], Status: imagegen.Status(status), Attempt: n}
	}
	return out
}

func (w *parkingWorld) step() string {
	ctx := w.ctx()
	r := w.rng.IntN(100)
	if w.many {
		// Many owners at their caps: submits, claims under a cap of one
		// and endings, a millisecond apart.
		w.clock.Advance(time.Millisecond)
		switch {
		case r < 10:
			r = 0 // submit
		case r < 45:
			w.claim(1, 1+w.rng.IntN(3), imagegen.Limits{})
			return "claim"
		case r < 50:
			w.claim(0, 1, imagegen.Limits{})
			return "claim"
		default:
			r = 70 // end
		}
	}
	switch {
	case r < 35:
		w.submit()
		return "submit"
	case r < 60:
		l := imagegen.Limits{}
		if w.rng.IntN(3) == 0 {
			l.ModelConcurrency = map[string]int{w.models[1]: 1}
		}
		w.claim([]int{0, 1, 1, 2}[w.rng.IntN(4)], 1+w.rng.IntN(3), l)
		return "claim"
	case r < 75:
		task := w.anyWith(imagegen.StatusProcessing)
		if task == nil {
			return "none"
		}
		var err error
		switch w.rng.IntN(4) {
		case 0:
			_, err = w.s.FailTask(ctx, task.ID, task.Attempt, imagegen.Failure{Code: imagegen.CodeProviderError, Message: "x"})
		case 1:
			err = w.s.RetryTask(ctx, task.ID, task.Attempt, time.Duration(w.rng.IntN(3))*time.Second, "x")
		case 2:
			err = w.s.ReleaseTask(ctx, task.ID, task.Attempt)
		case 3:
			_, err = w.s.CancelTask(ctx, task.Owner, task.ID, imagegen.CancelParams{})
		}
		if err != nil {
			w.t.Fatal(err)
		}
		return "end"
	case r < 82:
		task := w.anyWith(imagegen.StatusPending)
		if task == nil {
			return "none"
		}
		if _, err := w.s.CancelTask(ctx, task.Owner, task.ID, imagegen.CancelParams{}); err != nil {
			w.t.Fatal(err)
		}
		return "cancel"
	case r < 87:
		task := w.anyWith(imagegen.StatusFailed)
		if task == nil {
			return "none"
		}
		if err := w.s.RequeueTask(ctx, task.ID, false); err != nil {
			w.t.Fatal(err)
		}
		w.again[task.ID] = true
		return "requeue"
	case r < 89:
		if err := w.s.PauseModel(ctx, w.models[w.rng.IntN(len(w.models))], 3*time.Second); err != nil {
			w.t.Fatal(err)
		}
		return "pause"
	default:
		w.clock.Advance(time.Duration(1+w.rng.IntN(8000)) * time.Millisecond)
		if _, err := w.s.RecoverExpired(ctx, 100); err != nil {
			w.t.Fatal(err)
		}
		return "advance"
	}
}

// queues names the queues a pending task may be in: its model's, its
// model's delayed retries, its owner's parked queue of its model, the
// legacy one.
func (w *parkingWorld) queues(task *imagegen.Task) [4]string {
	return [4]string{w.s.k.fairModel(task.Model), w.s.k.delayed(task.Model), w.s.k.parked(task.Model, task.Owner), w.s.k.fair()}
}

// check verifies the queues' invariants.
func (w *parkingWorld) check(after string) {
	w.t.Helper()
	ctx := w.ctx()
	pend := map[string]int{}
	tasks := w.all()
	pipe := w.s.rdb.Pipeline()
	scores := make([][4]*goredis.FloatCmd, len(tasks))
	inParkedTasks := make([]*goredis.FloatCmd, len(tasks))
	dueAt := make([]*goredis.FloatCmd, len(tasks))
	for i, task := range tasks {
		for j, key := range w.queues(task) {
			scores[i][j] = pipe.ZScore(ctx, key, task.ID)
		}
		inParkedTasks[i] = pipe.ZScore(ctx, w.s.k.parkedTasks(task.Model), task.ID)
		dueAt[i] = pipe.ZScore(ctx, w.s.k.delayedDue(task.Model), task.ID)
	}
	_, _ = pipe.Exec(ctx)
	for i, task := range tasks {
		owner, model := task.Owner, task.Model
		in := 0
		var where []string
		for j, key := range w.queues(task) {
			if scores[i][j].Err() == nil {
				in++
				where = append(where, key)
			}
		}
		pending := task.Status == imagegen.StatusPending
		if pending {
			pend[owner]++
		}
		if pending && in != 1 || !pending && in != 0 {
			w.t.Fatalf("after %s: task %s (%s, attempt %d) is in %d queues %v", after, task.ID, task.Status, task.Attempt, in, where)
		}
		parked := in == 1 && where[0] == w.s.k.parked(model, owner)
		if listed := inParkedTasks[i].Err() == nil; listed != parked {
			w.t.Fatalf("after %s: task %s parked %v, among the model's parked tasks %v", after, task.ID, parked, listed)
		}
		delayed := in == 1 && where[0] == w.s.k.delayed(model)
		if due := dueAt[i].Err() == nil; due != delayed {
			w.t.Fatalf("after %s: task %s delayed %v, among the model's retries by run-after %v", after, task.ID, delayed, due)
		}
		if delayed {
			if runAfter, _ := w.s.rdb.HGet(ctx, w.s.k.task(task.ID), "run_after").Float64(); dueAt[i].Val() != runAfter {
				w.t.Fatalf("after %s: task %s delayed until %v, its run-after %v", after, task.ID, dueAt[i].Val(), runAfter)
			}
			first, err := w.s.rdb.ZRangeWithScores(ctx, w.s.k.delayedDue(model), 0, 0).Result()
			if err != nil || len(first) != 1 {
				w.t.Fatalf("after %s: the first of %s's delayed retries: %v, %v", after, model, first, err)
			}
			if at, err := w.s.rdb.ZScore(ctx, w.s.k.delayedModels(), model).Result(); err != nil || at != first[0].Score {
				w.t.Fatalf("after %s: %s noted among the models with delayed retries at %v (%v); its first is due at %v", after, model, at, err, first[0].Score)
			}
		}
		if parked {
			if err := w.s.rdb.ZScore(ctx, w.s.k.parkedOwners(model), owner).Err(); err != nil {
				w.t.Fatalf("after %s: task %s parked, its owner %s not among m's parked owners: %v", after, task.ID, owner, err)
			}
			if ok, _ := w.s.rdb.SIsMember(ctx, w.s.k.parkedModels(), model).Result(); !ok {
				w.t.Fatalf("after %s: task %s parked, its model %s not among the parked models", after, task.ID, model)
			}
		}
	}
	for _, owner := range w.owners {
		got, _ := w.s.rdb.HGet(ctx, w.s.k.sched(owner), "pend").Int()
		if got != pend[owner] {
			w.t.Fatalf("after %s: %s's pend %d; %d pending", after, owner, got, pend[owner])
		}
	}
	for _, model := range w.models {
		owners, _ := w.s.rdb.ZRange(ctx, w.s.k.parkedOwners(model), 0, -1).Result()
		for _, owner := range owners {
			if n, _ := w.s.rdb.ZCard(ctx, w.s.k.parked(model, owner)).Result(); n == 0 {
				w.t.Fatalf("after %s: %s parked in %s with an empty parked queue", after, owner, model)
			}
		}
	}
}

// drain ends every running task and claims on (under capN) until
// nothing is pending, each claimed task ended at once.
func (w *parkingWorld) drain(capN int) {
	ctx := w.ctx()
	w.clock.Advance(time.Minute)
	if _, err := w.s.RecoverExpired(ctx, 100); err != nil {
		w.t.Fatal(err)
	}
	for i := 0; i < 10*len(w.order)+100; i++ {
		got := w.claim(capN, 4, imagegen.Limits{})
		for _, task := range got {
			if _, err := w.s.FailTask(ctx, task.ID, task.Attempt, imagegen.Failure{Code: imagegen.CodeProviderError, Message: "x"}); err != nil {
				w.t.Fatal(err)
			}
		}
		if len(got) == 0 {
			w.clock.Advance(time.Second)
			if len(w.withStatus(imagegen.StatusPending)) == 0 {
				return
			}
		}
	}
	w.t.Fatalf("%d tasks still pending after draining: %v", len(w.withStatus(imagegen.StatusPending)), ids(w.withStatus(imagegen.StatusPending)))
}

func ids(ts []*imagegen.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// checkOrder: each owner's tasks of a model start (first attempts) in
// the order they were submitted.
func (w *parkingWorld) checkOrder() {
	for k, got := range w.first {
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				w.t.Errorf("%s first claims out of order: %v", k, got)
				break
			}
		}
	}
}

func runParkingWorld(t *testing.T, s *Store, seed uint64, owners, steps, drainCap int, many bool) {
	clock := imagegentest.NewClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	s.clock = clock
	w := &parkingWorld{t: t, s: s, clock: clock, rng: rand.New(rand.NewPCG(seed, 7)), models: []string{"m", "n"},
		tasks: map[string][2]string{}, first: map[string][]string{}, seen: map[string]bool{}, again: map[string]bool{}}
	for i := range owners {
		owner := fmt.Sprintf("o%03d", i)
		w.owners = append(w.owners, owner)
		if _, err := s.AddEntry(context.Background(), imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 100000, Ref: "grant:" + owner}); err != nil {
			t.Fatal(err)
		}
	}
	w.many = many
	if many { // every owner runs a task and queues a few more
		for range owners * 6 {
			w.submit()
		}
		for len(w.claim(1, 64, imagegen.Limits{})) > 0 {
		}
		w.check("start")
	}
	most := int64(0) // the most owners parked in a model at once
	for i := range steps {
		what := w.step()
		if !many || i%6 == 5 { // with many owners a check reads hundreds of tasks: every sixth step
			w.check(what)
		}
		for _, model := range w.models {
			if n, _ := s.rdb.ZCard(context.Background(), s.k.parkedOwners(model)).Result(); n > most {
				most = n
			}
		}
	}
	if many && most <= 64 {
		t.Fatalf("at most %d owners parked in a model; want more than a claim looks at (64)", most)
	}
	w.drain(drainCap)
	w.check("drain")
	w.checkOrder()
	h := fnv.New64a()
	for _, c := range w.trace {
		h.Write([]byte(c))
	}
	t.Logf("claims trace %x", h.Sum64())
}

// TestParkingRandomInvariants runs random steps against the queues'
// invariants, a few owners and many.
func TestParkingRandomInvariants(t *testing.T) {
	for _, c := range []struct{ seed, owners, steps, drain int }{
		{1, 4, 150, 1}, {2, 4, 150, 0}, {3, 6, 150, 1}, {4, 70, 200, 1}, {5, 3, 150, 2},
	} {
		t.Run(fmt.Sprint(c.seed), func(t *testing.T) {
			fundedStores(t, 10, func(t *testing.T, s *Store) {
				runParkingWorld(t, s, uint64(c.seed), c.owners, c.steps, c.drain, false)
			})
		})
	}
}

// TestParkingRandomManyOwners: more owners at their caps than a claim
// looks at (64 a model), their slots freeing at random.
func TestParkingRandomManyOwners(t *testing.T) {
	for _, seed := range []uint64{11} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			fundedStores(t, 10, func(t *testing.T, s *Store) {
				runParkingWorld(t, s, seed, 80, 120, 1, true)
			})
		})
	}
}
