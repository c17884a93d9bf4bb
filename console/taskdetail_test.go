package console

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

func TestSpan(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                      "0 ms",
		850 * time.Millisecond:            "850 ms",
		3200 * time.Millisecond:           "3.2 s",
		2*time.Minute + 5*time.Second:     "2 min 5 s",
		time.Hour + 4*time.Minute + 59e9:  "1 h 4 min",
		26*time.Hour + 30*time.Minute + 1: "26 h 30 min",
	} {
		if got := span(d); got != want {
			t.Errorf("span(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestDescribeSaysWhereTheTaskIs(t *testing.T) {
	created := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	started := created.Add(1500 * time.Millisecond)
	now := created.Add(10 * time.Second)
	cases := []struct {
		name     string
		task     imagegen.Task
		position int
		want     taskShown
	}{
		{"queued behind others", imagegen.Task{Status: imagegen.StatusPending, CreatedAt: created}, 3,
			taskShown{Progress: "Waiting in the queue: 3 tasks ahead of it.", Waited: "10.0 s so far"}},
		{"next", imagegen.Task{Status: imagegen.StatusPending, CreatedAt: created}, 0,
			taskShown{Progress: "Next in the queue: a worker will take it up as soon as one is free.", Waited: "10.0 s so far"}},
		{"waiting to retry", imagegen.Task{Status: imagegen.StatusPending, CreatedAt: created, StartedAt: started, Attempt: 2, RunAfter: now.Add(4 * time.Second)}, 0,
			taskShown{Progress: "Waiting to try again (attempt 2 did not succeed); retrying in 4.0 s.", Started: when(started), Waited: "1.5 s", Ran: "8.5 s so far"}},
		{"running", imagegen.Task{Status: imagegen.StatusProcessing, CreatedAt: created, StartedAt: started, Attempt: 2, Released: 1}, -1,
			taskShown{Progress: "Generating (attempt 1), for 8.5 s so far.", Started: when(started), Waited: "1.5 s", Ran: "8.5 s so far"}},
		{"done", imagegen.Task{Status: imagegen.StatusSuccess, CreatedAt: created, StartedAt: started, FinishedAt: started.Add(2 * time.Second), Images: []string{"a", "b"}}, -1,
			taskShown{Progress: "Done: 2 images.", Started: when(started), Finished: when(started.Add(2 * time.Second)), Waited: "1.5 s", Ran: "2.0 s"}},
		{"cancelled while queued", imagegen.Task{Status: imagegen.StatusFailed, ErrorCode: imagegen.CodeCancelled, CreatedAt: created, FinishedAt: now}, -1,
			taskShown{Progress: "Cancelled.", Finished: when(now)}},
		{"failed", imagegen.Task{Status: imagegen.StatusFailed, ErrorCode: imagegen.CodeInternal, CreatedAt: created, StartedAt: started, FinishedAt: now, Attempt: 3}, -1,
			taskShown{Progress: "Failed after 3 attempts.", Started: when(started), Finished: when(now), Waited: "1.5 s", Ran: "8.5 s"}},
	}
	for _, tc := range cases {
		if got := describe(&tc.task, now, tc.position); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// A running task whose model reports progress says how far it is, and
// the page's view carries it for the bar; a finished one does not.
func TestProgressIsShown(t *testing.T) {
	created := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	started := created.Add(time.Second)
	running := imagegen.Task{Status: imagegen.StatusProcessing, CreatedAt: created, StartedAt: started, Attempt: 1, Progress: 0.426}
	if got := describe(&running, started.Add(3*time.Second), -1).Progress; got != "Generating (attempt 1): 42% done, for 3.0 s so far." {
		t.Errorf("describe: %q", got)
	}
	if got := progressOf(&running); got != 0.426 {
		t.Errorf("progressOf(running) = %v", got)
	}
	done := running
	done.Status = imagegen.StatusSuccess
	if got := progressOf(&done); got != 0 {
		t.Errorf("progressOf(done) = %v; want 0", got)
	}
}
