package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/imagegen/imagegen"
)

// testFinishRaces races, on one claimed task, everything that may end or
// move it: two cancels, its worker's completion, failure, retry and
// release, and a recovery of expired leases (the lease run out in half
// the rounds, the last attempt allowed in some). Whatever wins, the task
// ends in one state that agrees with what each caller was told, its
// refund is given exactly once or never, and nothing is left processing.
func testFinishRaces(t *testing.T, h Harness) {
	s := h.Store
	const rounds, cost = 24, 2
	succeeded := 0
	var ids []string
	wins := map[string]int{} // the task's states after each round's race, logged

	for round := range rounds {
		task, c := startTask(t, s, "u", cost)
		ids = append(ids, task.ID)
		if round%2 == 1 {
			h.Advance(lease) // the lease has run out: recovery may take the task
		}
		maxAttempts := 2
		if round%4 == 1 {
			maxAttempts = 1 // and fail it
		}
		var (
			mu                                  sync.Mutex
			cancels, completes, fails, requeues int
			completesAgain                      int
			refunds                             int64
			recovered                           imagegen.Recovery
			start                               = make(chan struct{})
			wg                                  sync.WaitGroup
		)
		var racers []func()
		race := func(name string, fn func() error, allowed ...error) {
			racers = append(racers, func() {
				err := fn()
				for _, a := range allowed {
					if errors.Is(err, a) {
						return
					}
				}
				if err != nil {
					t.Errorf("round %d: %s: %v", round, name, err)
				}
			})
		}
		// won counts a call that took effect (err nil) in n, with what it
		// refunded, and returns err.
		won := func(n *int, refund int64, err error) error {
			if err == nil {
				mu.Lock()
				*n++
				refunds += refund
				mu.Unlock()
			}
			return err
		}
		for range 2 {
			race("cancel", func() error {
				refund, err := s.CancelTask(ctx, "u", task.ID, imagegen.CancelParams{})
				return won(&cancels, refund, err)
			}, imagegen.ErrInvalidTransition)
		}
		race("complete", func() error {
			return won(&completes, 0, completeWithImage(s, task.ID, c.Attempt, task.ID+"-a"))
		}, imagegen.ErrLeaseLost)
		race("fail", func() error {
			refund, err := s.FailTask(ctx, task.ID, c.Attempt, fail("provider down"))
			return won(&fails, refund, err)
		}, imagegen.ErrLeaseLost)
		race("retry", func() error {
			return won(&requeues, 0, s.RetryTask(ctx, task.ID, c.Attempt, 0, "try again"))
		}, imagegen.ErrLeaseLost)
		race("release", func() error {
			return won(&requeues, 0, s.ReleaseTask(ctx, task.ID, c.Attempt))
		}, imagegen.ErrLeaseLost)
		race("renew", func() error { return s.RenewLease(ctx, task.ID, c.Attempt, lease) }, imagegen.ErrLeaseLost)
		race("progress", func() error { return s.SetProgress(ctx, task.ID, c.Attempt, 0.5) }, imagegen.ErrLeaseLost)
		race("claim again", func() error {
			// A worker that claims the task once it is back in the
			// queue, and completes its own attempt.
			again, err := s.ClaimTask(ctx, lease)
			if err != nil {
				return err
			}
			if again.ID != task.ID || again.Attempt <= c.Attempt {
				return fmt.Errorf("claimed %s attempt %d, want %s after attempt %d", again.ID, again.Attempt, task.ID, c.Attempt)
			}
			return won(&completesAgain, 0, completeWithImage(s, task.ID, again.Attempt, task.ID+"-b"))
		}, imagegen.ErrNoTask, imagegen.ErrLeaseLost)
		race("recover", func() error {
			rec, err := s.RecoverExpired(ctx, maxAttempts)
			mu.Lock()
			recovered.Requeued += rec.Requeued
			recovered.Failed = append(recovered.Failed, rec.Failed...)
			mu.Unlock()
			return err
		})
		rand.Shuffle(len(racers), func(i, j int) { racers[i], racers[j] = racers[j], racers[i] })
		for _, r := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				r()
			}()
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			return
		}
		for _, f := range recovered.Failed {
			refunds += f.Refund
		}
		requeues += recovered.Requeued
		ended := completes + fails + len(recovered.Failed)
		if ended+requeues > 1 || cancels > 1 || ended == 1 && cancels == 1 ||
			completesAgain > requeues || completesAgain == 1 && cancels == 1 {
			t.Fatalf("round %d: more than one won: %d cancelled, %d completed, %d failed, %d recovery failed, %d requeued, %d completed again",
				round, cancels, completes, fails, len(recovered.Failed), requeues, completesAgain)
		}
		got := get(t, s, "u", task.ID)
		want := "pending"
		switch {
		case cancels == 1:
			want = fmt.Sprintf("failed %s", imagegen.CodeCancelled)
		case completes == 1 || completesAgain == 1:
			want = "success"
			succeeded++
		case fails == 1:
			want = fmt.Sprintf("failed %s", imagegen.CodeProviderError)
		case len(recovered.Failed) == 1:
			want = fmt.Sprintf("failed %s", imagegen.CodeInternal)
		case requeues == 0:
			want = "processing" // nothing won: the lease had not run out
		}
		state := string(got.Status)
		if got.Status == imagegen.StatusFailed {
			state += " " + string(got.ErrorCode)
		}
		wins[state]++
		if state != want {
			t.Fatalf("round %d: task is %s after %d cancelled, %d completed, %d failed, %d recovery failed, %d requeued; want %s",
				round, state, cancels, completes, fails, len(recovered.Failed), requeues, want)
		}
		// Only the winning completion's image is kept.
		for img, kept := range map[string]bool{task.ID + "-a": completes == 1, task.ID + "-b": completesAgain == 1} {
			_, err := s.Image(ctx, img)
			if kept != (err == nil) || err != nil && !errors.Is(err, imagegen.ErrImageNotFound) {
				t.Fatalf("round %d: image %s of a task %s: %v", round, img, want, err)
			}
			if kept {
				continue
			}
			if r, err := s.Blobs().Open(ctx, img); err == nil {
				r.Body.Close()
				t.Fatalf("round %d: the bytes of image %s, whose completion lost, are kept", round, img)
			}
		}
		if want == "pending" || want == "processing" {
			// Left to run: cancel it, so that the next round's claim
			// takes the next task.
			refund, err := s.CancelTask(ctx, "u", task.ID, imagegen.CancelParams{})
			if err != nil {
				t.Fatalf("round %d: cancel the task left %s: %v", round, want, err)
			}
			refunds += refund
		}
		if wantRefund := int64(cost); want == "success" {
			wantRefund = 0
			if refunds != wantRefund {
				t.Fatalf("round %d: refunds reported %d, want %d", round, refunds, wantRefund)
			}
		} else if refunds != wantRefund {
			t.Fatalf("round %d: refunds reported %d, want %d", round, refunds, wantRefund)
		}
	}

	t.Logf("after the races: %v", wins)

	// Nothing is left processing or queued, and the ledger has one
	// refund of each task that did not succeed.
	if rec := recoverAfterLease(t, h, 1); rec.Moved() != 0 {
		t.Fatalf("a recovery after the races moved %d tasks", rec.Moved())
	}
	if _, err := s.ClaimTask(ctx, lease); !errors.Is(err, imagegen.ErrNoTask) {
		t.Fatalf("a claim after the races: %v, want ErrNoTask", err)
	}
	entries := checkLedger(t, s, "u")
	refunded := 0
	for _, id := range ids {
		n := countRefs(entries, imagegen.RefundRef(id))
		if n > 1 || get(t, s, "u", id).Status == imagegen.StatusSuccess && n != 0 {
			t.Fatalf("task %s (%s) has %d refunds", id, get(t, s, "u", id).Status, n)
		}
		refunded += n
	}
	if refunded != rounds-succeeded {
		t.Fatalf("%d refunds for %d tasks that did not succeed", refunded, rounds-succeeded)
	}
	if b := balance(t, s, "u"); b != int64(cost*(rounds-succeeded)) {
		t.Fatalf("balance %d, want %d", b, cost*(rounds-succeeded))
	}
}

// completeWithImage completes attempt of task id with one image, its
// bytes and record together when the store can (BytesCompleter), its
// record alone otherwise.
func completeWithImage(s imagegen.Store, id string, attempt int, imageID string) error {
	img := imagegen.Image{ID: imageID, Owner: "u", ContentType: "image/png", Size: 3, Checksum: "x"}
	if bc, ok := s.(imagegen.BytesCompleter); ok {
		if done, err := bc.CompleteTaskWithBytes(ctx, id, attempt, []imagegen.Image{img}, [][]byte{[]byte("abc")}, nil); done {
			return err
		}
	}
	return s.CompleteTask(ctx, id, attempt, []imagegen.Image{img}, nil)
}
