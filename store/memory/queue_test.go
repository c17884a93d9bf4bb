package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// TestQueueMatchesLinearCount drives a store with random submits,
// claims, cancels, retries (with delays), releases, operator requeues,
// lease expiries and clock steps. After each it checks QueuePositions
// and QueueStats against linear scans over the pending tasks (how the
// store counted before), and each claim against the head that scan
// finds.
func TestQueueMatchesLinearCount(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 7))
		clock := imagegentest.NewClock(time.Time{})
		s, err := New(Config{Clock: clock, Retention: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 1 << 40, Ref: "grant"}); err != nil {
			t.Fatal(err)
		}
		var ids []string
		pick := func(status imagegen.Status) (*imagegen.Task, bool) {
			var of []*imagegen.Task
			for _, id := range ids {
				if tk, err := s.TaskByID(ctx, id); err == nil && tk.Status == status {
					of = append(of, tk)
				}
			}
			if len(of) == 0 {
				return nil, false
			}
			return of[rng.IntN(len(of))], true
		}
		for step := range 1500 {
			var err error
			switch op := rng.IntN(12); op {
			case 0, 1, 2: // submit
				id := fmt.Sprintf("t%d", len(ids))
				ids = append(ids, id)
				_, err = s.CreateTask(ctx, &imagegen.Task{ID: id, Owner: "u", Model: "m", Cost: 1,
					Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}, imagegen.CreateParams{})
			case 3, 4: // claim, which must take the linear scan's ready head
				want := linearHead(s)
				var got *imagegen.Task
				got, err = s.ClaimTask(ctx, time.Duration(1+rng.IntN(10))*time.Second)
				switch {
				case want == "" && err == imagegen.ErrNoTask:
					err = nil
				case err == nil && got.ID != want:
					err = fmt.Errorf("claimed %s, want %s", got.ID, want)
				}
			case 5: // cancel a pending or a processing task
				status := []imagegen.Status{imagegen.StatusPending, imagegen.StatusProcessing}[rng.IntN(2)]
				if tk, ok := pick(status); ok {
					err = errOf(s.CancelTask(ctx, "u", tk.ID, imagegen.CancelParams{}))
				}
			case 6: // retry after a delay
				if tk, ok := pick(imagegen.StatusProcessing); ok {
					err = s.RetryTask(ctx, tk.ID, tk.Attempt, time.Duration(rng.IntN(5))*time.Second, "again")
				}
			case 7: // release
				if tk, ok := pick(imagegen.StatusProcessing); ok {
					err = s.ReleaseTask(ctx, tk.ID, tk.Attempt)
				}
			case 8: // an operator requeues a failed task
				if tk, ok := pick(imagegen.StatusFailed); ok {
					err = s.RequeueTask(ctx, tk.ID, false)
				}
			case 9: // expired leases go back to the queue, or fail
				_, err = s.RecoverExpired(ctx, 1+rng.IntN(4))
			case 10:
				clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
			case 11: // several claims at once
				_, err = s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Second, N: 1 + rng.IntN(3)})
				if err == imagegen.ErrNoTask {
					err = nil
				}
			}
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			checkQueue(ctx, t, s, append(ids, "missing"))
			if t.Failed() {
				t.Fatalf("seed %d step %d", seed, step)
			}
		}
	}
}

// checkQueue compares the store's positions and stats with linear scans.
func checkQueue(ctx context.Context, t *testing.T, s *Store, ids []string) {
	t.Helper()
	got, err := s.QueuePositions(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, wantStats := linearQueue(s, ids)
	for i, id := range ids {
		if got[i] != want[i] {
			t.Errorf("position of %s: %d, want %d", id, got[i], want[i])
		}
	}
	if stats != wantStats {
		t.Errorf("stats %+v, want %+v", stats, wantStats)
	}
}

// linearQueue is the queue read the slow way: each pending task's
// position counts the pending tasks claimed before it (by fair-share
// tag, then by the seq of its queueing), and the stats count them one by one.
func linearQueue(s *Store, ids []string) ([]int, imagegen.QueueStats) {
	now := s.lock()
	defer s.mu.Unlock()
	key := func(r task) queueKey { return r.fair.key }
	var pending []task
	st := imagegen.QueueStats{}
	for r := range s.records() {
		t := r.view(s.loc)
		switch t.Status {
		case imagegen.StatusPending:
			pending = append(pending, r)
			st.Pending++
			if !t.RunAfter.After(now) {
				st.OldestPending = max(st.OldestPending, now.Sub(t.RunAfter))
			}
		case imagegen.StatusProcessing:
			st.Processing++
		}
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = -1
		r, ok := s.find(id)
		if !ok || r.status != statusPending {
			continue
		}
		out[i] = 0
		for _, o := range pending {
			if key(o).before(key(r)) {
				out[i]++
			}
		}
	}
	return out, st
}

// linearHead returns the pending task a claim takes now, by a linear
// scan, or "" when none is ready.
func linearHead(s *Store) string {
	now := s.lock()
	defer s.mu.Unlock()
	var head task
	for r := range s.records() {
		if t := r.view(s.loc); t.Status != imagegen.StatusPending || t.RunAfter.After(now) {
			continue
		}
		if head.record == nil || r.fair.key.before(head.fair.key) {
			head = r
		}
	}
	if head.record == nil {
		return ""
	}
	return head.id()
}

// errOf is the error of a FailTask or CancelTask, whose refund the
// check at hand does not look at.
func errOf(_ int64, err error) error { return err }
