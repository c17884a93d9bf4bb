package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// TestParkingRandomSteps drives one store through random steps (submits
// by a few owners on three models, claims under owner caps of 0, 1 and 2
// and sometimes a model cap, completes, failures, retries, releases,
// cancels of running, pending and parked tasks, requeues, pauses, the
// clock moved past leases with and without recovery, sweeps, late
// finishes of expired attempts) and checks each step against a model of
// the tasks kept by the test (parkWorld.check, parkWorld.claim), then
// drains the store with claims without caps; the crowd cases do so with
// more parked owners in a model than a claim looks at. A failure names
// its seed and subtest:
// go test -run '^TestParkingRandomSteps/seed=N$' replays it.
func TestParkingRandomSteps(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			pool := pgtest.Connect(t)
			clock := imagegentest.NewClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
			s := pgtest.NewStore(t, pool, postgres.Config{Clock: clock, Retention: 24 * time.Hour, SweepInterval: -1})
			runParkWorld(t, s, pool, clock, seed, 400, false)
		})
	}
	t.Run("pgbouncer/seed=7", func(t *testing.T) {
		p := pgtest.ConnectPooled(t) // skips unless IMAGEGEN_TEST_PGBOUNCER is set
		clock := imagegentest.NewClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
		s := p.NewStore(t, postgres.Config{Clock: clock, Retention: 24 * time.Hour, SweepInterval: -1})
		runParkWorld(t, s, p.Pool, clock, 7, 250, false)
	})
	// Many owners at a cap of one. Of seeds 11 to 18, 13, 15 and 17 meet
	// a new task of an owner with a free slot beyond the parked owners a
	// claim looks at: a claim that did not park it behind the owner's
	// parked tasks would start it before them.
	for _, seed := range []uint64{13, 15} {
		t.Run(fmt.Sprintf("crowd/seed=%d", seed), func(t *testing.T) {
			pool := pgtest.Connect(t)
			clock := imagegentest.NewClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
			s := pgtest.NewStore(t, pool, postgres.Config{Clock: clock, Retention: 24 * time.Hour, SweepInterval: -1})
			runParkWorld(t, s, pool, clock, seed, 200, true)
		})
	}
}

// parkTask is the test's model of one task.
type parkTask struct {
	id, owner, model string
	status           imagegen.Status
	attempt          int // claims so far (the store's attempt)
	released         int
	qseq             int // when it was last queued: an owner's tasks start in this order
	runAfter         time.Time
	leaseUntil       time.Time
}

// parkWorld is a store and the test's model of it.
type parkWorld struct {
	t      *testing.T
	s      *postgres.Store
	pool   *pgxpool.Pool
	schema string // sanitized
	clock  *imagegentest.Clock
	rng    *rand.Rand
	seed   uint64
	owners []string
	models []string
	tasks  map[string]*parkTask
	order  []string             // ids in submission order
	paused map[string]time.Time // model → paused until
	parked map[string]bool      // the pending tasks parked at the last check
	// cancelledParked: the tasks cancelled while parked, not requeued since
	cancelledParked map[string]bool
	stale           [][2]any // (id, attempt) of attempts whose lease was recovered
	qseq            int
	n               int
	steps           []string // what each step did, for failure messages
	seen            parkSeen
	// crowd: many owners at a cap of one (more parked owners than a
	// claim looks at); records: each model's parked owners at the last
	// check
	crowd   bool
	records map[string]int
}

// parkSeen counts what the steps exercised, so that a run that parks
// nothing fails rather than passes.
type parkSeen struct {
	parked          int // checks that found parked tasks
	claimedParked   int // parked tasks claimed
	cancelledParked int // parked tasks cancelled
	requeuedParked  int // tasks cancelled while parked, requeued
	leftRecords     int // checks that found a parked owner's record with no parked task
	mostRecords     int // the most parked owners of a model at a check
}

const (
	parkLease       = 15 * time.Second
	parkMaxAttempts = 3
)

// runParkWorld runs steps random steps on s (its clock clock, its
// tables read through pool), then drains it. With crowd, 80 owners on
// two models (most tasks of the first), each first queueing tasks and
// running one; else four on three models.
func runParkWorld(t *testing.T, s *postgres.Store, pool *pgxpool.Pool, clock *imagegentest.Clock, seed uint64, steps int, crowd bool) {
	ctx := context.Background()
	w := &parkWorld{t: t, s: s, pool: pool, schema: pgx.Identifier{s.Schema()}.Sanitize(), clock: clock,
		rng: rand.New(rand.NewPCG(seed, 26)), seed: seed, owners: []string{"ann", "bob", "cy", "dee"},
		models: []string{"m", "n", "o"}, tasks: map[string]*parkTask{}, paused: map[string]time.Time{},
		cancelledParked: map[string]bool{}, crowd: crowd}
	if crowd {
		w.owners, w.models = nil, []string{"m", "n"}
		for i := range 80 {
			w.owners = append(w.owners, fmt.Sprintf("o%02d", i))
		}
	}
	for _, owner := range w.owners {
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 100000, Ref: "g"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetOwnerWeight(ctx, "bob", 2); err != nil {
		t.Fatal(err)
	}
	if crowd { // every owner runs a task and queues more
		for _, owner := range w.owners {
			for range 4 {
				w.submit(owner, w.crowdModel())
			}
		}
		for range len(w.owners) {
			if strings.HasSuffix(w.claim(8, imagegen.Limits{OwnerConcurrency: 1}), ": []") {
				break
			}
		}
		w.steps = append(w.steps, "start")
		w.check()
	}
	for range steps {
		w.steps = append(w.steps, w.step())
		w.check()
	}
	switch {
	case w.seen.parked == 0 || w.seen.claimedParked == 0 || w.seen.cancelledParked == 0:
		w.fail("the steps exercised too little of parking: %+v", w.seen)
	case !crowd && w.seen.requeuedParked == 0:
		w.fail("no task cancelled while parked was requeued: %+v", w.seen)
	case crowd && w.seen.mostRecords <= 64:
		w.fail("at most %d owners parked in a model; want more than a claim looks at (64)", w.seen.mostRecords)
	}
	w.drain()
}

// fail ends the test with what went wrong, the last steps and the seed.
func (w *parkWorld) fail(format string, args ...any) {
	w.t.Helper()
	last := w.steps[max(0, len(w.steps)-12):]
	w.t.Fatalf("seed %d, step %d: %s\nlast steps:\n  %s\nreplay: go test -run '^%s$' ./store/postgres/",
		w.seed, len(w.steps), fmt.Sprintf(format, args...), strings.Join(last, "\n  "), w.t.Name())
}

func (w *parkWorld) must(err error, what string) {
	w.t.Helper()
	if err != nil {
		w.fail("%s: %v", what, err)
	}
}

// queued notes that task was given back to (or put in) the queue now.
func (w *parkWorld) queued(task *parkTask, runAfter time.Time) {
	w.qseq++
	task.status, task.qseq, task.runAfter, task.leaseUntil = imagegen.StatusPending, w.qseq, runAfter, time.Time{}
}

// with is the tasks of status st, in submission order, those parked at
// the last check only when parkedOnly.
func (w *parkWorld) with(st imagegen.Status, parkedOnly bool) []*parkTask {
	var out []*parkTask
	for _, id := range w.order {
		if task := w.tasks[id]; task.status == st && (!parkedOnly || w.parked[id]) {
			out = append(out, task)
		}
	}
	return out
}

func (w *parkWorld) pick(tasks []*parkTask) *parkTask {
	if len(tasks) == 0 {
		return nil
	}
	return tasks[w.rng.IntN(len(tasks))]
}

// running counts the tasks whose leases hold now, of owner or model.
func (w *parkWorld) running(now time.Time, owner, model string) int {
	n := 0
	for _, task := range w.tasks {
		if task.status == imagegen.StatusProcessing && task.leaseUntil.After(now) &&
			(owner == "" || task.owner == owner) && (model == "" || task.model == model) {
			n++
		}
	}
	return n
}

// submit queues a task of owner and model.
func (w *parkWorld) submit(owner, model string) string {
	w.n++
	id := fmt.Sprintf("t%04d-%s-%s", w.n, owner, model)
	task := &parkTask{id: id, owner: owner, model: model}
	_, err := w.s.CreateTask(context.Background(), &imagegen.Task{ID: id, Owner: owner, Model: model, Cost: 1,
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}, imagegen.CreateParams{})
	w.must(err, "submit "+id)
	w.tasks[id] = task
	w.order = append(w.order, id)
	w.queued(task, w.clock.Now())
	return "submit " + id
}

// crowdOwner is any owner, or, half the time, one with a free slot
// (under a cap of one) and parked tasks of m: its new task, met in m's
// queue by a claim that does not look at the owner, must be parked
// behind them.
func (w *parkWorld) crowdOwner() string {
	if w.rng.IntN(2) == 0 {
		now := w.clock.Now()
		var free []string
		for _, owner := range w.owners {
			if w.running(now, owner, "") > 0 {
				continue
			}
			for id := range w.parked {
				if task := w.tasks[id]; task.owner == owner && task.model == "m" && task.status == imagegen.StatusPending {
					free = append(free, owner)
					break
				}
			}
		}
		if len(free) > 0 {
			return free[w.rng.IntN(len(free))]
		}
	}
	return w.owners[w.rng.IntN(len(w.owners))]
}

// crowdModel is m four times in five, else n.
func (w *parkWorld) crowdModel() string {
	if w.rng.IntN(5) == 0 {
		return "n"
	}
	return "m"
}

func (w *parkWorld) step() string {
	ctx := context.Background()
	w.clock.Advance(time.Millisecond)
	r := w.rng.IntN(100)
	if w.crowd {
		// More owners at their caps than a claim looks at: submits,
		// claims under a cap of one and endings; now and then a claim
		// without caps, a cancel, a requeue, the clock past some leases.
		switch {
		case r < 15:
			return w.submit(w.crowdOwner(), w.crowdModel())
		case r < 45:
			return w.claim(1+w.rng.IntN(3), imagegen.Limits{OwnerConcurrency: 1})
		case r < 50:
			return w.claim(1, imagegen.Limits{})
		case r < 85:
			r = 60 // end
		case r < 90:
			r = 70 // cancel pending
		case r < 93:
			r = 77 // requeue
		default:
			r = 90 // advance
		}
	}
	switch {
	case r < 28:
		owner := w.owners[0] // the first owner queues most, so it sits at its cap with a backlog
		if w.rng.IntN(5) >= 2 {
			owner = w.owners[w.rng.IntN(len(w.owners))]
		}
		return w.submit(owner, w.models[w.rng.IntN(len(w.models))])
	case r < 53:
		l := imagegen.Limits{OwnerConcurrency: []int{0, 1, 1, 2, 2}[w.rng.IntN(5)]}
		switch w.rng.IntN(6) {
		case 0:
			l.ModelConcurrency = map[string]int{"n": 1}
		case 1:
			l.ModelConcurrency = map[string]int{"m": 2, "o": 1}
		}
		return w.claim(1+w.rng.IntN(4), l)
	case r < 68:
		task := w.pick(w.with(imagegen.StatusProcessing, false))
		if task == nil {
			return "end: none running"
		}
		return w.end(task)
	case r < 75:
		task := w.pick(w.with(imagegen.StatusPending, true))
		if task == nil || w.rng.IntN(2) == 0 {
			task = w.pick(w.with(imagegen.StatusPending, false))
		}
		if task == nil {
			return "cancel: none pending"
		}
		what := fmt.Sprintf("cancel pending %s (parked %v)", task.id, w.parked[task.id])
		_, err := w.s.CancelTask(ctx, task.owner, task.id, imagegen.CancelParams{})
		w.must(err, what)
		task.status = imagegen.StatusFailed
		if w.parked[task.id] {
			w.seen.cancelledParked++
			w.cancelledParked[task.id] = true
		}
		return what
	case r < 80:
		task := w.pick(w.with(imagegen.StatusFailed, false))
		if task == nil {
			return "requeue: none failed"
		}
		w.must(w.s.RequeueTask(ctx, task.id, false), "requeue "+task.id)
		w.queued(task, w.clock.Now())
		if w.cancelledParked[task.id] {
			w.seen.requeuedParked++
			delete(w.cancelledParked, task.id)
		}
		return "requeue " + task.id
	case r < 83:
		model := w.models[w.rng.IntN(len(w.models))]
		d := time.Duration(1+w.rng.IntN(4)) * time.Second
		w.must(w.s.PauseModel(ctx, model, d), "pause "+model)
		if until := w.clock.Now().Add(d); until.After(w.paused[model]) {
			w.paused[model] = until
		}
		return fmt.Sprintf("pause %s %v", model, d)
	case r < 95:
		d := time.Duration(1+w.rng.IntN(10000)) * time.Millisecond
		w.clock.Advance(d)
		if w.rng.IntN(2) == 0 {
			return fmt.Sprintf("advance %v, no recovery", d)
		}
		return fmt.Sprintf("advance %v, %s", d, w.recover(parkMaxAttempts))
	case r < 98:
		swept, err := w.s.Sweep(ctx)
		w.must(err, "sweep")
		if swept.Unparked != 0 || swept.Tasks != 0 {
			w.fail("sweep unparked %d tasks and removed %d; want none (no stray parked task, nothing expired)", swept.Unparked, swept.Tasks)
		}
		return "sweep"
	default:
		if len(w.stale) == 0 {
			return "late finish: none"
		}
		late := w.stale[w.rng.IntN(len(w.stale))]
		id, attempt := late[0].(string), late[1].(int)
		if task := w.tasks[id]; task.status == imagegen.StatusProcessing && task.attempt == attempt {
			return "late finish: holds again"
		}
		err := w.s.CompleteTask(ctx, id, attempt, []imagegen.Image{{ID: fmt.Sprintf("%s-%d-late", id, attempt), ContentType: "image/png", Size: 1}}, nil)
		if !errors.Is(err, imagegen.ErrLeaseLost) {
			w.fail("late finish of %s attempt %d: %v; want ErrLeaseLost", id, attempt, err)
		}
		return fmt.Sprintf("late finish %s attempt %d refused", id, attempt)
	}
}

// end finishes running task one of five ways.
func (w *parkWorld) end(task *parkTask) string {
	ctx := context.Background()
	now := w.clock.Now()
	var err error
	var what string
	switch w.rng.IntN(5) {
	case 0:
		what = "complete"
		err = w.s.CompleteTask(ctx, task.id, task.attempt, []imagegen.Image{{ID: fmt.Sprintf("%s-%d", task.id, task.attempt), ContentType: "image/png", Size: 1}}, nil)
		task.status = imagegen.StatusSuccess
	case 1:
		what = "fail"
		_, err = w.s.FailTask(ctx, task.id, task.attempt, imagegen.Failure{Code: imagegen.CodeProviderError, Message: "x"})
		task.status = imagegen.StatusFailed
	case 2:
		delay := time.Duration(w.rng.IntN(3)) * time.Second
		what = fmt.Sprintf("retry in %v", delay)
		err = w.s.RetryTask(ctx, task.id, task.attempt, delay, "x")
		w.queued(task, now.Add(delay))
	case 3:
		what = "release"
		err = w.s.ReleaseTask(ctx, task.id, task.attempt)
		task.released++
		w.queued(task, now)
	default:
		what = "cancel running"
		_, err = w.s.CancelTask(ctx, task.owner, task.id, imagegen.CancelParams{})
		task.status = imagegen.StatusFailed
	}
	what = fmt.Sprintf("%s %s attempt %d", what, task.id, task.attempt)
	w.must(err, what)
	return what
}

// recover runs RecoverExpired: the tasks whose leases ended go back to
// the queue in the order their leases ended (those that ended together
// in no known order), or fail on their last attempt.
func (w *parkWorld) recover(maxAttempts int) string {
	now := w.clock.Now()
	var expired []*parkTask
	for _, task := range w.tasks {
		if task.status == imagegen.StatusProcessing && !task.leaseUntil.After(now) {
			expired = append(expired, task)
		}
	}
	sort.Slice(expired, func(i, j int) bool { return expired[i].leaseUntil.Before(expired[j].leaseUntil) })
	requeued, failed := 0, 0
	var last time.Time
	for _, task := range expired {
		w.stale = append(w.stale, [2]any{task.id, task.attempt})
		if task.attempt-task.released >= maxAttempts {
			task.status = imagegen.StatusFailed
			failed++
			continue
		}
		if !task.leaseUntil.Equal(last) {
			w.qseq++
			last = task.leaseUntil
		}
		task.status, task.qseq, task.runAfter, task.leaseUntil = imagegen.StatusPending, w.qseq, now, time.Time{}
		requeued++
	}
	rec, err := w.s.RecoverExpired(context.Background(), maxAttempts)
	w.must(err, "recover")
	if rec.Requeued != requeued || len(rec.Failed) != failed {
		w.fail("recovery requeued %d and failed %d; want %d and %d", rec.Requeued, len(rec.Failed), requeued, failed)
	}
	return fmt.Sprintf("recovered %d, failed %d", requeued, failed)
}

// claim claims up to n tasks under l and checks what it took: pending
// ready tasks of models not paused, each once, no owner or model past
// its cap, each owner's tasks of a model oldest first, and, when it took
// fewer than n, no task left that it could have taken.
func (w *parkWorld) claim(n int, l imagegen.Limits) string {
	now := w.clock.Now()
	got, err := w.s.ClaimTasks(context.Background(), imagegen.ClaimParams{Lease: parkLease, N: n, Limits: l})
	if err != nil && !errors.Is(err, imagegen.ErrNoTask) {
		w.fail("claim: %v", err)
	}
	ids := make([]string, len(got))
	for i, c := range got {
		ids[i] = c.ID
	}
	what := fmt.Sprintf("claim n=%d owner cap %d model caps %v: %v", n, l.OwnerConcurrency, l.ModelConcurrency, ids)
	w.steps = append(w.steps, what) // so that a failure below shows it
	defer func() { w.steps = w.steps[:len(w.steps)-1] }()
	var taken []*parkTask
	for _, c := range got {
		task := w.tasks[c.ID]
		switch {
		case task == nil:
			w.fail("claimed %s, which no step submitted", c.ID)
		case task.status != imagegen.StatusPending:
			w.fail("claimed %s, %s (attempt %d)", c.ID, task.status, task.attempt)
		case task.runAfter.After(now):
			w.fail("claimed %s, not ready until %v", c.ID, task.runAfter.Sub(now))
		case w.paused[task.model].After(now):
			w.fail("claimed %s of paused model %s", c.ID, task.model)
		case c.Attempt != task.attempt+1:
			w.fail("claimed %s as attempt %d; want %d", c.ID, c.Attempt, task.attempt+1)
		}
		task.status, task.attempt, task.leaseUntil = imagegen.StatusProcessing, c.Attempt, now.Add(parkLease)
		taken = append(taken, task)
		if w.parked[task.id] {
			w.seen.claimedParked++
		}
	}
	for i, task := range taken {
		if c := l.OwnerConcurrency; c > 0 && w.running(now, task.owner, "") > c {
			w.fail("owner %s runs %d tasks after the claim; its cap is %d", task.owner, w.running(now, task.owner, ""), c)
		}
		if c := l.ModelConcurrency[task.model]; c > 0 && w.running(now, "", task.model) > c {
			w.fail("model %s runs %d tasks after the claim; its cap is %d", task.model, w.running(now, "", task.model), c)
		}
		for _, other := range taken[:i] {
			if other.owner == task.owner && other.model == task.model && other.qseq > task.qseq {
				w.fail("claimed %s after %s, queued after it by the same owner", task.id, other.id)
			}
		}
		for _, other := range w.tasks {
			if other.status == imagegen.StatusPending && other.owner == task.owner && other.model == task.model &&
				other.qseq < task.qseq && !other.runAfter.After(now) {
				w.fail("claimed %s and left %s (parked %v), queued before it by the same owner and ready", task.id, other.id, w.parked[other.id])
			}
		}
	}
	if len(got) < n {
		for _, id := range w.order {
			task := w.tasks[id]
			// A claim looks at 64 of a model's parked owners: with more,
			// one beyond them waits a claim or a few (the drain checks
			// that it is claimed in the end).
			if task.status == imagegen.StatusPending && w.records[task.model] < 64 && !task.runAfter.After(now) && !w.paused[task.model].After(now) &&
				(l.OwnerConcurrency == 0 || w.running(now, task.owner, "") < l.OwnerConcurrency) &&
				(l.ModelConcurrency[task.model] == 0 || w.running(now, "", task.model) < l.ModelConcurrency[task.model]) {
				w.fail("the claim took %d of %d and left %s (parked %v), which may start", len(got), n, id, w.parked[id])
			}
		}
	}
	return what
}

// check compares the store's tasks with the model: the same status and
// attempt, each parked pending task's owner recorded among its model's
// parked owners (else no claim finds it), and the queue positions those
// of the model's pending tasks, each owner's in the order they were
// queued.
func (w *parkWorld) check() {
	w.t.Helper()
	ctx := context.Background()
	// The rows are read whole before any is checked: a test that failed
	// with rows open would keep their connection, and the pool's Close
	// would wait for it.
	type row struct {
		ID, Status       string
		Attempt          int
		Parked, Recorded bool
	}
	rows, err := w.pool.Query(ctx, fmt.Sprintf(`SELECT t.id, t.status, t.attempt, t.parked,
			EXISTS (SELECT 1 FROM %[1]s.parked_owners o WHERE o.model = t.model AND o.owner = t.owner)
		FROM %[1]s.tasks t`, w.schema))
	w.must(err, "read tasks")
	stored, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	w.must(err, "read tasks")
	w.parked = map[string]bool{}
	seen := 0
	for _, r := range stored {
		task := w.tasks[r.ID]
		if task == nil {
			w.fail("the store holds %s, which no step submitted", r.ID)
		}
		seen++
		if imagegen.Status(r.Status) != task.status || r.Attempt != task.attempt {
			w.fail("%s is %s at attempt %d; want %s at %d", r.ID, r.Status, r.Attempt, task.status, task.attempt)
		}
		if task.status == imagegen.StatusPending && r.Parked {
			w.parked[r.ID] = true
			if !r.Recorded {
				w.fail("%s is parked and its owner %s is not among %s's parked owners: no claim finds it", r.ID, task.owner, task.model)
			}
		}
	}
	if len(w.parked) > 0 {
		w.seen.parked++
	}
	var empty bool
	w.must(w.pool.QueryRow(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %[1]s.parked_owners o WHERE NOT EXISTS (SELECT 1
		FROM %[1]s.tasks t WHERE t.model = o.model AND t.owner = o.owner AND t.status = 'pending' AND t.parked))`, w.schema)).
		Scan(&empty), "read parked owners")
	if empty {
		w.seen.leftRecords++
	}
	w.records = map[string]int{}
	type count struct {
		Model string
		N     int
	}
	rows, err = w.pool.Query(ctx, fmt.Sprintf(`SELECT model, count(*)::int FROM %s.parked_owners GROUP BY model`, w.schema))
	w.must(err, "count parked owners")
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[count])
	w.must(err, "count parked owners")
	for _, c := range counts {
		w.records[c.Model] = c.N
		w.seen.mostRecords = max(w.seen.mostRecords, c.N)
	}
	if seen != len(w.tasks) {
		w.fail("the store holds %d tasks; want %d", seen, len(w.tasks))
	}
	positions, err := w.s.QueuePositions(ctx, w.order)
	w.must(err, "queue positions")
	var pending []*parkTask
	at := map[string]int{}
	for i, id := range w.order {
		task := w.tasks[id]
		if task.status != imagegen.StatusPending {
			if positions[i] != -1 {
				w.fail("%s, %s, at position %d", id, task.status, positions[i])
			}
			continue
		}
		pending = append(pending, task)
		at[id] = positions[i]
	}
	got := make([]int, 0, len(pending))
	for _, task := range pending {
		got = append(got, at[task.id])
	}
	slices.Sort(got)
	for i, p := range got {
		if p != i {
			w.fail("the pending tasks' positions are %v; want 0 to %d", got, len(got)-1)
		}
	}
	for _, a := range pending {
		for _, b := range pending {
			if a.owner == b.owner && a.qseq < b.qseq && at[a.id] > at[b.id] {
				w.fail("%s at position %d, after %s at %d, which its owner queued later", a.id, at[a.id], b.id, at[b.id])
			}
		}
	}
}

// drain lets every pause and lease run out, recovers the leases and
// claims without caps until nothing is left: every pending task is
// claimed once, and no parked owner's record is left behind.
func (w *parkWorld) drain() {
	ctx := context.Background()
	w.steps = append(w.steps, "drain")
	w.clock.Advance(imagegen.MaxModelPause + time.Minute)
	w.recover(100)
	want := map[string]bool{}
	for _, task := range w.with(imagegen.StatusPending, false) {
		want[task.id] = true
	}
	claimed := map[string]bool{}
	for range len(w.tasks) + 2 {
		got, err := w.s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: parkLease, N: 4})
		if errors.Is(err, imagegen.ErrNoTask) {
			break
		}
		w.must(err, "drain claim")
		for _, c := range got {
			if !want[c.ID] || claimed[c.ID] {
				w.fail("the drain claimed %s (pending before it %v, claimed before %v)", c.ID, want[c.ID], claimed[c.ID])
			}
			claimed[c.ID] = true
			w.tasks[c.ID].status, w.tasks[c.ID].attempt = imagegen.StatusSuccess, c.Attempt
			w.must(w.s.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{{ID: c.ID + "-drained", ContentType: "image/png", Size: 1}}, nil), "complete "+c.ID)
		}
	}
	if len(claimed) != len(want) {
		var left []string
		for id := range want {
			if !claimed[id] {
				left = append(left, fmt.Sprintf("%s (parked %v)", id, w.parked[id]))
			}
		}
		sort.Strings(left)
		w.fail("the drain claimed %d of %d pending tasks; left %v", len(claimed), len(want), left)
	}
	w.check()
	var records int
	w.must(w.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s.parked_owners`, w.schema)).Scan(&records), "count parked owners")
	if records != 0 {
		w.fail("%d parked owners' records left once nothing is pending", records)
	}
	w.t.Logf("seed %d: %d tasks, %d claimed by the drain; %+v", w.seed, len(w.tasks), len(claimed), w.seen)
}
