package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// stressLog is what the goroutines of TestConcurrentQueueKeepsItsRules
// were told by the store, checked against the database at the end.
type stressLog struct {
	mu sync.Mutex
	// owner of each task created
	owner map[string]string
	cost  map[string]int64
	// per task, the attempts whose CompleteTask returned nil, with the
	// images each gave
	completed map[string][]int
	images    map[string][]string
	// per task and attempt, how many of complete, fail, retry and
	// release returned nil: at most one
	ended map[string]int
	// per owner, credits the store said it gave back
	refunds map[string]int64
	// per owner, credits granted
	grants map[string]int64
	// per task, whether its last requeue was free (no recharge)
	free map[string]bool
	// per task, requeues that succeeded
	requeues map[string]int
	// per task, requeues with a recharge that succeeded
	recharges map[string]int
	// per task, the highest attempt a claim has returned
	claimed map[string]int
	// how often a call was refused with ErrLeaseLost, and tasks recovery moved
	lost, requeuedByRecovery, failedByRecovery int
	// calls made by an attempt already superseded
	staleCalls int
	failures   []string
}

// claim notes that a claim returned attempt of task id.
func (l *stressLog) claim(id string, attempt int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if attempt <= l.claimed[id] {
		l.failures = append(l.failures, fmt.Sprintf("%s: claimed at attempt %d after attempt %d", id, attempt, l.claimed[id]))
	}
	l.claimed[id] = attempt
}

// superseded reports whether a claim of a later attempt of task id has
// returned: from then on, attempt can change nothing.
func (l *stressLog) superseded(id string, attempt int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.claimed[id] > attempt
}

func (l *stressLog) failf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures) < 50 {
		l.failures = append(l.failures, fmt.Sprintf(format, args...))
	}
}

// end notes that how (complete, fail, retry, release) of attempt
// returned nil; stale is whether a later attempt's claim had returned
// before the call was made.
func (l *stressLog) end(id string, attempt int, how string, stale bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if stale {
		l.failures = append(l.failures, fmt.Sprintf("%s: %s of superseded attempt %d succeeded", id, how, attempt))
	}
	key := fmt.Sprintf("%s#%d", id, attempt)
	l.ended[key]++
	if l.ended[key] > 1 {
		l.failures = append(l.failures, fmt.Sprintf("%s: attempt %d ended twice (last by %s)", id, attempt, how))
	}
}

func (l *stressLog) refund(owner string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refunds[owner] += n
}

// Workers on two stores (two processes) claim with short leases and
// complete, fail, retry, release, renew or abandon what they claim,
// some of them too late; owners submit and cancel; a recovery loop
// requeues and fails expired leases; an operator requeues failed tasks,
// with and without a recharge; grants come in. Once that stops and the
// queue is drained, every task has ended once in a final state, each
// charge is refunded at most once (a failed task's exactly once, a
// succeeded one's never unless it last ran free), every balance is its
// ledger's sum, and what the store answered agrees with the database: no
// stale attempt finished a task, no attempt ended twice, the refunds it
// reported are the ledger's.
func TestConcurrentQueueKeepsItsRules(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	a := pgtest.NewStore(t, pool, postgres.Config{Retention: time.Hour, SweepInterval: -1})
	b, err := postgres.New(pool, postgres.Config{Schema: a.Schema(), Retention: time.Hour, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	stores := []*postgres.Store{a, b}

	owners := []string{"o0", "o1", "o2", "o3"}
	const (
		tasksPerOwner = 60
		chaos         = 2 * time.Second
		maxAttempts   = 3
	)
	log := &stressLog{owner: map[string]string{}, cost: map[string]int64{}, completed: map[string][]int{},
		images: map[string][]string{}, ended: map[string]int{}, refunds: map[string]int64{}, grants: map[string]int64{},
		free: map[string]bool{}, requeues: map[string]int{}, recharges: map[string]int{},
		claimed: map[string]int{}}
	grant := func(s *postgres.Store, owner string, n int64, ref string) {
		_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: n, Ref: ref})
		if err != nil {
			log.failf("grant %s %s: %v", owner, ref, err)
			return
		}
		log.mu.Lock()
		log.grants[owner] += n
		log.mu.Unlock()
	}
	for _, o := range owners {
		grant(a, o, 150, "initial")
	}

	stop := make(chan struct{})
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup
	var ops atomic.Int64
	run := func(f func(r *rand.Rand)) {
		wg.Add(1)
		seed := rand.Uint64()
		go func() {
			defer wg.Done()
			f(rand.New(rand.NewPCG(seed, seed>>7)))
		}()
	}

	// Owners submit (some with a pending cap) and cancel their own tasks.
	for oi, o := range owners {
		run(func(r *rand.Rand) {
			for i := 0; i < tasksPerOwner && !stopped(); i++ {
				task := newTask(fmt.Sprintf("%s-t%03d", o, i), o)
				task.Cost = 1 + r.Int64N(3)
				p := imagegen.CreateParams{}
				if r.IntN(4) == 0 {
					p.MaxPending = 5
				}
				_, err := stores[r.IntN(2)].CreateTask(ctx, task, p)
				switch {
				case err == nil:
					log.mu.Lock()
					log.owner[task.ID], log.cost[task.ID] = o, task.Cost
					log.mu.Unlock()
				case errors.Is(err, imagegen.ErrInsufficientCredits), errors.Is(err, imagegen.ErrQueueFull):
				default:
					log.failf("create %s: %v", task.ID, err)
				}
				ops.Add(1)
				time.Sleep(time.Duration(r.IntN(8)) * time.Millisecond)
			}
		})
		run(func(r *rand.Rand) {
			for !stopped() {
				time.Sleep(time.Duration(5+r.IntN(20)) * time.Millisecond)
				id := fmt.Sprintf("%s-t%03d", o, r.IntN(tasksPerOwner))
				refund, err := stores[r.IntN(2)].CancelTask(ctx, o, id, imagegen.CancelParams{})
				switch {
				case err == nil:
					log.refund(o, refund)
				case errors.Is(err, imagegen.ErrTaskNotFound), errors.Is(err, imagegen.ErrInvalidTransition):
				default:
					log.failf("cancel %s: %v", id, err)
				}
				ops.Add(1)
			}
		})
		if oi%2 == 0 { // grants now and then
			run(func(r *rand.Rand) {
				for i := 0; !stopped(); i++ {
					time.Sleep(time.Duration(50+r.IntN(100)) * time.Millisecond)
					grant(stores[r.IntN(2)], o, 1+r.Int64N(20), fmt.Sprint("g", i))
				}
			})
		}
	}

	// Workers.
	for w := range 4 {
		run(func(r *rand.Rand) {
			s := stores[w%2]
			var limits imagegen.Limits
			if w == 3 {
				limits = imagegen.Limits{OwnerConcurrency: 2, ModelConcurrency: map[string]int{"m": 6}}
			}
			var zombies []*imagegen.Task
			for !stopped() {
				lease := time.Duration(20+r.IntN(60)) * time.Millisecond
				claimed, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 1 + r.IntN(3), Limits: limits})
				if errors.Is(err, imagegen.ErrNoTask) {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				if err != nil {
					log.failf("claim: %v", err)
					continue
				}
				for _, c := range claimed {
					log.claim(c.ID, c.Attempt)
				}
				for _, c := range claimed {
					if c.Status != imagegen.StatusProcessing {
						log.failf("claimed %s in status %s", c.ID, c.Status)
					}
					if !work(ctx, r, s, c, lease, log) && len(zombies) < 32 {
						zombies = append(zombies, c)
					}
					ops.Add(1)
				}
				// A worker that lost track of time comes back to a
				// task it left, long after its lease ran out.
				// Those claimed again since come first.
				if len(zombies) > 0 && r.IntN(3) == 0 {
					i := slices.IndexFunc(zombies, func(z *imagegen.Task) bool { return log.superseded(z.ID, z.Attempt) })
					if i < 0 {
						if len(zombies) < 16 {
							continue
						}
						i = r.IntN(len(zombies))
					}
					act(ctx, r, s, zombies[i], lease, log, 18)
					zombies = slices.Delete(zombies, i, i+1)
				}
			}
		})
	}

	// Recovery.
	run(func(r *rand.Rand) {
		for !stopped() {
			time.Sleep(time.Duration(5+r.IntN(20)) * time.Millisecond)
			rec, err := stores[r.IntN(2)].RecoverExpired(ctx, maxAttempts)
			if err != nil {
				log.failf("recover: %v", err)
			}
			for _, f := range rec.Failed {
				log.refund(f.Owner, f.Refund)
			}
			log.mu.Lock()
			log.requeuedByRecovery += rec.Requeued
			log.failedByRecovery += len(rec.Failed)
			log.mu.Unlock()
			ops.Add(1)
		}
	})

	// The operator requeues failed tasks, at most twice each.
	run(func(r *rand.Rand) {
		for !stopped() {
			time.Sleep(time.Duration(10+r.IntN(30)) * time.Millisecond)
			page, err := a.ListAllTasks(ctx, imagegen.TaskFilter{Status: imagegen.StatusFailed}, 20, "")
			if err != nil {
				log.failf("list failed: %v", err)
				continue
			}
			for _, task := range page.Tasks {
				log.mu.Lock()
				n := log.requeues[task.ID]
				log.mu.Unlock()
				if n >= 2 || r.IntN(3) == 0 {
					continue
				}
				recharge := r.IntN(2) == 0
				err := stores[r.IntN(2)].RequeueTask(ctx, task.ID, recharge)
				switch {
				case err == nil:
					log.mu.Lock()
					log.requeues[task.ID]++
					log.free[task.ID] = !recharge
					if recharge {
						log.recharges[task.ID]++
					}
					log.mu.Unlock()
				case errors.Is(err, imagegen.ErrInvalidTransition), errors.Is(err, imagegen.ErrInsufficientCredits):
				case errors.Is(err, imagegen.ErrDuplicateEntry):
					// A second recharge at one attempt (requeued with a
					// recharge, cancelled while pending, requeued with a
					// recharge again): refused, nothing changed.
				default:
					log.failf("requeue %s: %v", task.ID, err)
				}
				ops.Add(1)
			}
		}
	})

	time.Sleep(chaos)
	close(stop)
	wg.Wait()

	// Drain: recover what was abandoned, finish everything left.
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := a.RecoverExpired(ctx, maxAttempts)
		if err != nil {
			t.Fatalf("recover: %v", err)
		}
		for _, f := range rec.Failed {
			log.refund(f.Owner, f.Refund)
		}
		claimed, err := a.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 64})
		if err != nil && !errors.Is(err, imagegen.ErrNoTask) {
			t.Fatalf("claim: %v", err)
		}
		for _, c := range claimed {
			log.claim(c.ID, c.Attempt)
			img := imagegen.Image{ID: fmt.Sprintf("%s-drain-%d", c.ID, c.Attempt), ContentType: "image/png", Size: 1}
			if err := a.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{img}, nil); err != nil {
				t.Fatalf("complete %s in the drain: %v", c.ID, err)
			}
			log.mu.Lock()
			log.completed[c.ID] = append(log.completed[c.ID], c.Attempt)
			log.images[c.ID] = []string{img.ID}
			log.mu.Unlock()
		}
		st, err := a.QueueStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending == 0 && st.Processing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks stuck: %+v", st)
		}
		if len(claimed) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}

	checkStress(t, pool, a.Schema(), owners, log)
	t.Logf("%d operations on %d tasks", ops.Load(), len(log.owner))
}

// work does one random thing with a claimed task, as a worker would:
// often quickly, sometimes close to its lease, sometimes well past it
// (the lease recovered, and maybe the task claimed again meanwhile).
// It reports false when the worker walked away from the task (its lease
// to run out).
func work(ctx context.Context, r *rand.Rand, s *postgres.Store, c *imagegen.Task, lease time.Duration, log *stressLog) bool {
	switch r.IntN(6) {
	case 0:
		time.Sleep(time.Duration(r.Int64N(int64(lease))))
	case 1:
		time.Sleep(lease + time.Duration(r.Int64N(int64(2*lease))))
	}
	if r.IntN(4) == 0 {
		stale := log.superseded(c.ID, c.Attempt)
		err := s.RenewLease(ctx, c.ID, c.Attempt, lease)
		switch {
		case err == nil && stale:
			log.failf("%s: renewal of superseded attempt %d succeeded", c.ID, c.Attempt)
		case err != nil && !errors.Is(err, imagegen.ErrLeaseLost):
			log.failf("renew %s: %v", c.ID, err)
		}
	}
	return act(ctx, r, s, c, lease, log, 20)
}

// act completes (9 in 20), fails (4), retries (3) or releases (2) the
// task, or walks away (the rest of choices), and checks the answer.
func act(ctx context.Context, r *rand.Rand, s *postgres.Store, c *imagegen.Task, lease time.Duration, log *stressLog, choices int) bool {
	stale := log.superseded(c.ID, c.Attempt)
	if stale {
		log.mu.Lock()
		log.staleCalls++
		log.mu.Unlock()
	}
	var err error
	var how string
	switch k := r.IntN(choices); {
	case k < 9:
		how = "complete"
		img := imagegen.Image{ID: fmt.Sprintf("%s-a%d-%d", c.ID, c.Attempt, r.Uint32()), ContentType: "image/png", Size: 1}
		if err = s.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{img}, nil); err == nil {
			log.mu.Lock()
			log.completed[c.ID] = append(log.completed[c.ID], c.Attempt)
			log.images[c.ID] = []string{img.ID}
			log.mu.Unlock()
		}
	case k < 13:
		how = "fail"
		var refund int64
		if refund, err = s.FailTask(ctx, c.ID, c.Attempt, imagegen.Failure{Code: imagegen.CodeInternal, Message: "boom"}); err == nil {
			log.refund(c.Owner, refund)
		}
	case k < 16:
		how = "retry"
		err = s.RetryTask(ctx, c.ID, c.Attempt, time.Duration(r.IntN(20))*time.Millisecond, "again")
	case k < 18:
		how = "release"
		err = s.ReleaseTask(ctx, c.ID, c.Attempt)
	default: // the worker dies: the lease runs out
		return false
	}
	switch {
	case err == nil:
		log.end(c.ID, c.Attempt, how, stale)
	case errors.Is(err, imagegen.ErrLeaseLost):
		log.mu.Lock()
		log.lost++
		log.mu.Unlock()
	default:
		log.failf("%s %s: %v", how, c.ID, err)
	}
	return true
}

// checkStress checks the database against the rules and against log.
func checkStress(t *testing.T, pool *pgxpool.Pool, schema string, owners []string, log *stressLog) {
	t.Helper()
	ctx := context.Background()
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, f := range log.failures {
		t.Error(f)
	}
	q := func(sql string) string { return strings.ReplaceAll(sql, "{schema}", pgx.Identifier{schema}.Sanitize()) }

	type task struct {
		owner, status string
		cost          int64
		attempt       int
		refunded      bool
		leased        bool
		images        []string
	}
	tasks := map[string]*task{}
	rows, err := pool.Query(ctx, q(`SELECT id, owner, status, cost, attempt, refunded, lease_until IS NOT NULL, coalesce(images, '{}') FROM {schema}.tasks`))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var tk task
		if err := rows.Scan(&id, &tk.owner, &tk.status, &tk.cost, &tk.attempt, &tk.refunded, &tk.leased, &tk.images); err != nil {
			t.Fatal(err)
		}
		tasks[id] = &tk
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tasks) != len(log.owner) {
		t.Errorf("%d tasks in the database, %d created", len(tasks), len(log.owner))
	}
	var succeeded, failed int
	for id, tk := range tasks {
		if log.owner[id] != tk.owner || log.cost[id] != tk.cost {
			t.Errorf("%s: owner %s cost %d, created for %s at %d", id, tk.owner, tk.cost, log.owner[id], log.cost[id])
		}
		if tk.leased {
			t.Errorf("%s: %s with a lease", id, tk.status)
		}
		done := log.completed[id]
		switch tk.status {
		case "success":
			succeeded++
			if len(done) != 1 || done[0] != tk.attempt {
				t.Errorf("%s: success at attempt %d; CompleteTask answered nil for attempts %v", id, tk.attempt, done)
			}
			if !slices.Equal(tk.images, log.images[id]) {
				t.Errorf("%s: images %v, the completing call gave %v", id, tk.images, log.images[id])
			}
			if tk.refunded != log.free[id] {
				t.Errorf("%s: succeeded with refunded=%v; last requeue free: %v", id, tk.refunded, log.free[id])
			}
		case "failed":
			failed++
			if len(done) != 0 {
				t.Errorf("%s: failed, but CompleteTask answered nil for attempts %v", id, done)
			}
			if !tk.refunded {
				t.Errorf("%s: failed and not refunded", id)
			}
		default:
			t.Errorf("%s: %s after the drain", id, tk.status)
		}
	}
	if succeeded == 0 || failed == 0 {
		t.Errorf("%d succeeded, %d failed: the test exercised too little", succeeded, failed)
	}

	// Images: each one a success's, listed on it.
	rows, err = pool.Query(ctx, q(`SELECT id, task_id FROM {schema}.images`))
	if err != nil {
		t.Fatal(err)
	}
	perTask := map[string]int{}
	for rows.Next() {
		var id, taskID string
		if err := rows.Scan(&id, &taskID); err != nil {
			t.Fatal(err)
		}
		perTask[taskID]++
		if tk := tasks[taskID]; tk == nil || tk.status != "success" || !slices.Contains(tk.images, id) {
			t.Errorf("image %s of task %s is not among a success's images", id, taskID)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for id, tk := range tasks {
		if perTask[id] != len(tk.images) {
			t.Errorf("%s: %d image records, %d images listed", id, perTask[id], len(tk.images))
		}
	}

	// The ledger: numbered 1..n, each balance_after the running sum,
	// never below zero, the last the account's balance; per task, one
	// charge per run paid for and one refund per charge at most.
	charges, refunds := map[string]int{}, map[string]int{}
	for _, o := range owners {
		var balance, entries, pending int64
		if err := pool.QueryRow(ctx, q(`SELECT balance, entries, pending + coalesce((SELECT sum(d) FROM {schema}.pending_moves m WHERE m.owner = a.owner), 0)
			FROM {schema}.accounts a WHERE owner = $1`), o).Scan(&balance, &entries, &pending); err != nil {
			t.Fatalf("account %s: %v", o, err)
		}
		if pending != 0 {
			t.Errorf("%s: pending count %d after the drain", o, pending)
		}
		rows, err := pool.Query(ctx, q(`SELECT n, kind, amount, ref, balance_after FROM {schema}.ledger WHERE owner = $1 ORDER BY n`), o)
		if err != nil {
			t.Fatal(err)
		}
		var sum, n, granted, refunded int64
		for rows.Next() {
			var en, amount, after int64
			var kind, ref string
			if err := rows.Scan(&en, &kind, &amount, &ref, &after); err != nil {
				t.Fatal(err)
			}
			n++
			sum += amount
			if en != n || after != sum || after < 0 {
				t.Errorf("%s: entry %d (%s %s %d): number %d, balance after %d, running sum %d", o, n, kind, ref, amount, en, after, sum)
			}
			switch kind {
			case "grant":
				granted += amount
			case "charge", "refund":
				rest, _ := strings.CutPrefix(strings.TrimPrefix(ref, "task:"), "refund:")
				id, _, _ := strings.Cut(rest, ":")
				tk := tasks[id]
				if tk == nil || tk.owner != o || (kind == "charge" && amount != -tk.cost) || (kind == "refund" && amount != tk.cost) {
					t.Errorf("%s: %s %s of %d does not match its task", o, kind, ref, amount)
					continue
				}
				if kind == "charge" {
					charges[id]++
				} else {
					refunds[id]++
					refunded += amount
				}
			default:
				t.Errorf("%s: entry of kind %s", o, kind)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if sum != balance || n != entries {
			t.Errorf("%s: balance %d over %d entries; the ledger sums to %d over %d", o, balance, entries, sum, n)
		}
		if granted != log.grants[o] {
			t.Errorf("%s: %d granted in the ledger, %d by AddEntry", o, granted, log.grants[o])
		}
		if refunded != log.refunds[o] {
			t.Errorf("%s: %d refunded in the ledger, %d reported by FailTask, CancelTask and RecoverExpired", o, refunded, log.refunds[o])
		}
	}
	for id, tk := range tasks {
		want := 1 + log.recharges[id]
		if charges[id] != want {
			t.Errorf("%s: %d charges, want %d (recharged %d times)", id, charges[id], want, log.recharges[id])
		}
		paid := 0
		if !tk.refunded {
			paid = 1
		}
		if refunds[id] != charges[id]-paid {
			t.Errorf("%s: %s, refunded=%v: %d charges, %d refunds", id, tk.status, tk.refunded, charges[id], refunds[id])
		}
	}
	t.Logf("%d succeeded, %d failed, %d requeued by the operator; recovery requeued %d and failed %d; %d calls refused with ErrLeaseLost, %d by superseded attempts",
		succeeded, failed, len(log.requeues), log.requeuedByRecovery, log.failedByRecovery, log.lost, log.staleCalls)
}
