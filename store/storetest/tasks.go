package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

func testCreateTask(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 5)
	task := newTask("u", 3)
	b, err := s.CreateTask(ctx, task, imagegen.CreateParams{})
	is.NoErr(err)
	is.Equal(b, int64(2))
	got := get(t, s, "u", task.ID)
	is.Equal(got.Status, imagegen.StatusPending)
	is.Equal(got.Cost, int64(3))
	is.Equal(got.Model, "test")
	is.Equal(got.Request.Prompt, task.Request.Prompt)
	is.Equal(got.Request.ImageInput, task.Request.ImageInput)
	is.Equal(got.Attempt, 0)
	is.True(!got.CreatedAt.IsZero())
	entries := checkLedger(t, s, "u")
	is.Equal(countRefs(entries, "task:"+task.ID), 1)
	is.Equal(entries[len(entries)-1].Kind, imagegen.LedgerCharge)
	is.Equal(entries[len(entries)-1].Amount, int64(-3))
	claimed := claim(t, s)
	is.Equal(claimed.ID, task.ID)
}

func testInsufficientCredits(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 2)
	task := newTask("u", 3)
	_, err := s.CreateTask(ctx, task, imagegen.CreateParams{})
	is.True(errors.Is(err, imagegen.ErrInsufficientCredits))
	_, err = s.Task(ctx, "u", task.ID)
	is.True(errors.Is(err, imagegen.ErrTaskNotFound)) // no task without its charge
	is.Equal(balance(t, s, "u"), int64(2))
	is.Equal(len(checkLedger(t, s, "u")), 1)
	_, err = s.ClaimTask(ctx, lease)
	is.True(errors.Is(err, imagegen.ErrNoTask))

	// An owner with no ledger at all has nothing to spend.
	_, err = s.CreateTask(ctx, newTask("nobody", 1), imagegen.CreateParams{})
	is.True(errors.Is(err, imagegen.ErrInsufficientCredits))
	is.Equal(balance(t, s, "nobody"), int64(0))
}

func testConcurrentSubmits(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	const submits, credits = 1000, 37
	grant(t, s, "u", credits)
	var (
		wg                sync.WaitGroup
		mu                sync.Mutex
		accepted, refused int
		unexpected        []error
	)
	for i := 0; i < submits; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := s.CreateTask(ctx, newTask("u", 1), imagegen.CreateParams{})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && b >= 0:
				accepted++
			case errors.Is(err, imagegen.ErrInsufficientCredits):
				refused++
			default:
				unexpected = append(unexpected, err)
			}
		}()
	}
	wg.Wait()
	is.Equal(unexpected, nil)
	is.Equal(accepted, credits)
	is.Equal(refused, submits-credits)
	is.Equal(balance(t, s, "u"), int64(0))
	is.Equal(len(checkLedger(t, s, "u")), credits+1)
	claimed := 0
	for {
		_, err := s.ClaimTask(ctx, lease)
		if errors.Is(err, imagegen.ErrNoTask) {
			break
		}
		is.NoErr(err)
		claimed++
	}
	is.Equal(claimed, credits) // every charge has its task
}

func testOwnership(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	task := submitFunded(t, s, "alice", 1)
	_, err := s.Task(ctx, "mallory", task.ID)
	is.True(errors.Is(err, imagegen.ErrTaskNotFound))
	_, err = s.Task(ctx, "alice", "no-such-task")
	is.True(errors.Is(err, imagegen.ErrTaskNotFound))
	err = errOf(s.CancelTask(ctx, "mallory", task.ID, imagegen.CancelParams{}))
	is.True(errors.Is(err, imagegen.ErrTaskNotFound))
	is.Equal(get(t, s, "alice", task.ID).Status, imagegen.StatusPending)
	// Once it has ended too: another owner cannot tell that it exists.
	is.NoErr(errOf(s.CancelTask(ctx, "alice", task.ID, imagegen.CancelParams{})))
	err = errOf(s.CancelTask(ctx, "mallory", task.ID, imagegen.CancelParams{}))
	is.True(errors.Is(err, imagegen.ErrTaskNotFound))
	is.True(!errors.Is(err, imagegen.ErrInvalidTransition))
}

func testClaimOrder(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 3)
	ids := submitApart(t, h, "u", 3)
	for _, id := range ids {
		c := claim(t, s)
		is.Equal(c.ID, id)
		is.Equal(c.Status, imagegen.StatusProcessing)
		is.Equal(c.Attempt, 1)
		is.True(c.LeaseUntil.After(c.CreatedAt))
		stored := get(t, s, "u", id)
		is.Equal(stored.Status, imagegen.StatusProcessing)
		is.Equal(stored.Attempt, 1)
		is.True(stored.LeaseUntil.Equal(c.LeaseUntil))
	}
	_, err := s.ClaimTask(ctx, lease)
	is.True(errors.Is(err, imagegen.ErrNoTask))
}

func testClaimTasks(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 6)
	ids := submitApart(t, h, "u", 5)
	later := submit(t, s, "u", 1)
	h.Advance(time.Millisecond) // stores order tasks ready in the same millisecond as they like
	first := claim(t, s)
	is.Equal(first.ID, ids[0])
	is.NoErr(s.RetryTask(ctx, first.ID, first.Attempt, 0, "again")) // ready again at once, behind the others
	is.Equal(claim(t, s).ID, ids[1])
	is.Equal(claim(t, s).ID, ids[2])
	delayed := claim(t, s)
	is.Equal(delayed.ID, ids[3])
	is.NoErr(s.RetryTask(ctx, delayed.ID, delayed.Attempt, time.Hour, "later")) // not ready for an hour

	got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 2})
	is.NoErr(err)
	is.Equal(len(got), 2)
	is.Equal(got[0].ID, ids[4])
	is.Equal(got[1].ID, later.ID)
	for _, g := range got {
		is.Equal(g.Status, imagegen.StatusProcessing)
		is.Equal(g.Attempt, 1)
	}
	got, err = s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 10})
	is.NoErr(err)
	is.Equal(len(got), 1) // the retried one; the delayed one is not ready
	is.Equal(got[0].ID, ids[0])
	is.Equal(got[0].Attempt, 2)
	got, err = s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 10})
	is.True(errors.Is(err, imagegen.ErrNoTask)) // never an empty batch with no error
	is.Equal(len(got), 0)
	h.Advance(time.Hour)
	got, err = s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 10})
	is.NoErr(err)
	is.Equal(len(got), 1)
	is.Equal(got[0].ID, ids[3])
}

// testQueuePositions: a pending task's position is how many pending
// tasks are ahead of it in claim order; anything not pending has none.
// The first claim stamps StartedAt, and a retry keeps it.
func testQueuePositions(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 3)
	grant(t, s, "v", 1)
	a := submit(t, s, "u", 1)
	h.Advance(time.Millisecond)
	b := submit(t, s, "v", 1) // another owner's task counts: the queue is shared
	h.Advance(time.Millisecond)
	c := submit(t, s, "u", 1)
	h.Advance(time.Millisecond)
	d := submit(t, s, "u", 1)
	positions := func(ids ...string) []int {
		t.Helper()
		p, err := s.QueuePositions(ctx, ids)
		is.NoErr(err)
		return p
	}
	is.Equal(positions(a.ID, b.ID, c.ID, d.ID, "no-such-task"), []int{0, 1, 2, 3, -1})
	is.Equal(len(positions()), 0)
	is.True(get(t, s, "u", a.ID).StartedAt.IsZero()) // not started while pending

	h.Advance(time.Second)
	first := claim(t, s)
	is.Equal(first.ID, a.ID)
	started := get(t, s, "u", a.ID).StartedAt
	is.True(!started.IsZero())
	is.True(!started.Before(get(t, s, "u", a.ID).CreatedAt.Add(time.Second)))
	is.Equal(positions(a.ID, b.ID, c.ID, d.ID), []int{-1, 0, 1, 2})

	is.NoErr(errOf(s.CancelTask(ctx, "v", b.ID, imagegen.CancelParams{})))
	is.Equal(positions(b.ID, c.ID, d.ID), []int{-1, 0, 1})

	// A retry goes back behind the tasks that are due before it, and
	// keeps the time it first started.
	h.Advance(time.Second)
	is.NoErr(s.RetryTask(ctx, a.ID, first.Attempt, time.Hour, "busy"))
	is.Equal(positions(a.ID, c.ID, d.ID), []int{2, 0, 1})
	is.Equal(get(t, s, "u", a.ID).StartedAt, started)
	is.NoErr(s.CompleteTask(ctx, claim(t, s).ID, 1, nil, nil)) // c
	is.Equal(positions(a.ID, c.ID, d.ID), []int{1, -1, 0})
	h.Advance(time.Hour)
	claim(t, s) // d
	again := claim(t, s)
	is.Equal(again.ID, a.ID)
	is.Equal(get(t, s, "u", a.ID).StartedAt, started) // the first start, not the latest
}

func testConcurrentClaims(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	const tasks, workers = 100, 8
	grant(t, s, "u", tasks)
	for i := 0; i < tasks; i++ {
		submit(t, s, "u", 1)
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
		errs []error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				// Half the workers claim one at a time, half in batches.
				var claimed []*imagegen.Task
				var err error
				if w%2 == 0 {
					var c *imagegen.Task
					if c, err = s.ClaimTask(ctx, lease); err == nil {
						claimed = append(claimed, c)
					}
				} else {
					claimed, err = s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 3})
				}
				mu.Lock()
				switch {
				case errors.Is(err, imagegen.ErrNoTask):
					mu.Unlock()
					return
				case err != nil:
					errs = append(errs, err)
					mu.Unlock()
					return
				case len(claimed) == 0:
					errs = append(errs, errors.New("claim: no task and no error"))
					mu.Unlock()
					return
				}
				for _, c := range claimed {
					seen[c.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	is.Equal(errs, nil)
	is.Equal(len(seen), tasks)
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("task %s claimed %d times", id, n)
		}
	}
}

// testCopies checks that callers cannot change stored state through the
// values a store returns or takes.
func testCopies(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	task := submitFunded(t, s, "u", 1)
	task.Request.ImageInput[0] = "https://evil.example/"
	task.Status = imagegen.StatusSuccess

	got := get(t, s, "u", task.ID)
	is.Equal(got.Request.ImageInput, []string{"https://example.com/a.png"})
	is.Equal(got.Status, imagegen.StatusPending)
	got.Request.ImageInput[0] = "https://evil.example/"
	got.Owner = "mallory"
	again := get(t, s, "u", task.ID)
	is.Equal(again.Request.ImageInput, []string{"https://example.com/a.png"})
	is.Equal(again.Owner, "u")

	c := claim(t, s)
	is.NoErr(s.CompleteTask(ctx, task.ID, c.Attempt, []imagegen.Image{image(task.ID + "-img")}, nil))
	done := get(t, s, "u", task.ID)
	done.Images[0] = "other"
	is.Equal(get(t, s, "u", task.ID).Images, []string{task.ID + "-img"})
}
