package console

import (
	"fmt"
	"time"

	"github.com/imagegen/imagegen"
)

// taskShown is what the task page writes as text about a task's
// progress and timings, worked out by the server (the page's script
// copies each field into the element with id "shown-<json name>", so
// the live page and a reload read the same). "" where not known yet.
type taskShown struct {
	Progress string `json:"progress"` // a sentence: where the task is
	Started  string `json:"started"`  // first claimed by a worker
	Finished string `json:"finished"`
	Waited   string `json:"waited"`     // from submission to first claim
	Ran      string `json:"generation"` // from first claim to the end
}

// describe says where t is at now; position is its place in the queue
// (tasks ahead of it) when pending, else -1.
func describe(t *imagegen.Task, now time.Time, position int) taskShown {
	s := taskShown{Started: when(t.StartedAt), Finished: when(t.FinishedAt)}
	if !t.StartedAt.IsZero() {
		s.Waited = span(t.StartedAt.Sub(t.CreatedAt))
		end := t.FinishedAt
		if end.IsZero() {
			end = now
		}
		s.Ran = span(end.Sub(t.StartedAt))
		if t.FinishedAt.IsZero() {
			s.Ran += " so far"
		}
	} else if t.FinishedAt.IsZero() {
		s.Waited = span(now.Sub(t.CreatedAt)) + " so far"
	}
	attempts := t.Attempt - t.Released
	switch {
	case t.Status == imagegen.StatusPending && t.RunAfter.After(now):
		s.Progress = fmt.Sprintf("Waiting to try again (attempt %d did not succeed); retrying in %s.", attempts, span(t.RunAfter.Sub(now)))
	case t.Status == imagegen.StatusPending && position == 0:
		s.Progress = "Next in the queue: a worker will take it up as soon as one is free."
	case t.Status == imagegen.StatusPending && position > 0:
		s.Progress = fmt.Sprintf("Waiting in the queue: %d task%s ahead of it.", position, plural(position))
	case t.Status == imagegen.StatusPending:
		s.Progress = "Waiting in the queue."
	case t.Status == imagegen.StatusProcessing && t.Progress > 0:
		s.Progress = fmt.Sprintf("Generating (attempt %d): %d%% done, for %s so far.", max(attempts, 1), int(t.Progress*100), span(now.Sub(t.StartedAt)))
	case t.Status == imagegen.StatusProcessing:
		s.Progress = fmt.Sprintf("Generating (attempt %d), for %s so far.", max(attempts, 1), span(now.Sub(t.StartedAt)))
	case t.Status == imagegen.StatusSuccess:
		s.Progress = fmt.Sprintf("Done: %d image%s.", len(t.Images), plural(len(t.Images)))
	case t.ErrorCode == imagegen.CodeCancelled:
		s.Progress = "Cancelled."
	case t.Status == imagegen.StatusFailed:
		s.Progress = fmt.Sprintf("Failed after %d attempt%s.", attempts, plural(attempts))
	}
	return s
}

// when is a time to the second, in UTC, or "" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// span is a duration as a person reads it: 850 ms, 3.2 s, 2 min 5 s,
// 1 h 4 min.
func span(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
