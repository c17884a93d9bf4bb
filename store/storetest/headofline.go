package storetest

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/matryer/is"
)

// heldBacklog is more tasks than a claim may pass over, so that a store
// that walks one queue of every model's tasks finds none that may start
// within its look-ahead.
const heldBacklog = imagegen.ClaimScan + 44

// heldModel is one way to hold back model "slow" under limits l.
type heldModel struct {
	l    imagegen.Limits
	hold func(t *testing.T, h Harness, l imagegen.Limits) // holds "slow" back under l
	end  time.Duration                                    // how long until the hold ends
	ran  int                                              // how many of the backlog hold ran
}

var heldModels = map[string]heldModel{
	"Paused": {
		hold: func(t *testing.T, h Harness, _ imagegen.Limits) {
			if err := h.Store.PauseModel(ctx, "slow", time.Minute); err != nil {
				t.Fatal(err)
			}
		},
		end: time.Minute,
	},
	"Capped": {
		l:    imagegen.Limits{ModelConcurrency: map[string]int{"slow": 1}},
		hold: claimTheBacklogsFirst,
		end:  lease, // the running task's slot comes back with its lease
		ran:  1,
	},
	"Rated": {
		l:    imagegen.Limits{ModelRate: map[string]int{"slow": 1}},
		hold: claimTheBacklogsFirst,
		end:  time.Minute,
		ran:  1,
	},
}

// claimTheBacklogsFirst claims the first task of the queue, "slow"'s,
// under l: its cap's one slot, or its rate's one start of the minute.
func claimTheBacklogsFirst(t *testing.T, h Harness, l imagegen.Limits) {
	t.Helper()
	if got := claimWith(t, h.Store, 1, l); len(got) != 1 || got[0].Model != "slow" {
		t.Fatalf("the first claim took %d tasks, want the backlog's first", len(got))
	}
}

// testHeldModelHoldsNoOneBack: a model held back (paused, at its cap,
// or waiting for its rate) whose backlog at the head of the queue is
// longer than a claim's look-ahead does not hold back another model's
// tasks queued behind it: a claim takes them at once, alone or in a
// batch. The backlog stays queued, in its order, and is claimed once
// the hold ends.
func testHeldModelHoldsNoOneBack(kind string) func(*testing.T, Harness) {
	return func(t *testing.T, h Harness) {
		is := is.New(t)
		s, c := h.Store, heldModels[kind]
		backlog := submitModel(t, h, "a", "slow", heldBacklog)
		fast := submitModel(t, h, "a", "fast", 3)
		c.hold(t, h, c.l)
		got := claimWith(t, s, 1, c.l)
		is.Equal(len(got), 1) // a claim of one found the other model's task
		is.Equal(got[0].ID, fast[0])
		got = claimWith(t, s, 8, c.l)
		is.Equal(len(got), 2) // a batch found the other model's tasks
		is.Equal(got[0].ID, fast[1])
		is.Equal(got[1].ID, fast[2])
		is.Equal(len(claimWith(t, s, 8, c.l)), 0) // the backlog is still held
		stats, err := s.SchedulerStats(ctx, c.l)
		is.NoErr(err)
		is.True(stats.Held[imagegen.HeldModelCap]+stats.Held[imagegen.HeldModelRate] > 0)
		h.Advance(c.end)
		got = claimWith(t, s, 1, c.l)
		is.Equal(len(got), 1)
		is.Equal(got[0].ID, backlog[c.ran]) // the backlog kept its order
	}
}

// testRetriedBacklogHoldsNoOneBack: a model's retries waiting out their
// delay (a provider failing every generation), more of them than a
// claim's look-ahead, at the head of the queue, do not hold back
// another model's task queued behind them: the look-ahead is spent
// within each model's queue.
func testRetriedBacklogHoldsNoOneBack(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	backlog := submitModel(t, h, "a", "failing", heldBacklog)
	for range backlog {
		task := claim(t, s)
		is.NoErr(s.RetryTask(ctx, task.ID, task.Attempt, time.Hour, "provider unavailable"))
	}
	fast := submitModel(t, h, "a", "fast", 1)
	got := claimWith(t, s, 1, imagegen.Limits{})
	is.Equal(len(got), 1) // the retries held back the other model's task
	is.Equal(got[0].ID, fast[0])
}
