package console

import (
	"slices"
	"time"

	"github.com/imagegen/imagegen"
)

// The operator page's charts draw the last hour minute by minute from
// the tasks themselves, as the store keeps them for every process: when
// each was created, first claimed and finished, and how. Nothing is
// sampled, so the charts are the same from any process and cover the
// hour before the process started too. Their limits (said on the page):
// a task created before the scanned span (chartLookback, or fewer when
// the scan hit its cap) is not seen, and a retry's return to the queue
// is not drawn (a task counts as pending until its first claim).

// chartMinutes is how many minutes the charts span, the current one
// last.
const chartMinutes = 60

// chartLookback is how far back the scan for the charts reaches: a task
// that finished in the last hour was created in the last two unless it
// waited in the queue or ran for more than an hour.
const chartLookback = 2 * time.Hour

// minute is what happened in one minute of the last hour.
type minute struct {
	Start     time.Time
	Succeeded int // tasks that finished this minute, by how
	Failed    int
	Cancelled int
	// P50 and P95 are the generation times (first claim to finish) of
	// the tasks that succeeded this minute; 0 when none did.
	P50, P95 time.Duration
	// Pending and Processing are the queue at the end of the minute (now,
	// for the current one).
	Pending, Processing int64
}

// lastHour works out the last hour, a minute apiece, from tasks (every
// task created in the scanned span, in any order), the queue as it is
// now, and now.
func lastHour(tasks []*imagegen.Task, queue imagegen.QueueStats, now time.Time) []minute {
	first := now.Truncate(time.Minute).Add(-(chartMinutes - 1) * time.Minute)
	mins := make([]minute, chartMinutes)
	gen := make([][]time.Duration, chartMinutes)
	for i := range mins {
		mins[i].Start = first.Add(time.Duration(i) * time.Minute)
	}
	index := func(t time.Time) (int, bool) {
		if t.IsZero() || t.Before(first) || t.After(now) {
			return 0, false
		}
		return int(t.Sub(first) / time.Minute), true
	}
	// The queue is known now; going back, each change after a minute's
	// end is undone: a task created later was not there yet, one that
	// was claimed or finished later was still waiting or running.
	type change struct {
		at                  time.Time
		pending, processing int64
	}
	var changes []change
	for _, t := range tasks {
		if i, ok := index(t.FinishedAt); ok {
			switch {
			case t.Status == imagegen.StatusSuccess:
				mins[i].Succeeded++
				if !t.StartedAt.IsZero() {
					gen[i] = append(gen[i], t.FinishedAt.Sub(t.StartedAt))
				}
			case t.ErrorCode == imagegen.CodeCancelled:
				mins[i].Cancelled++
			case t.Status == imagegen.StatusFailed:
				mins[i].Failed++
			}
		}
		changes = append(changes, change{t.CreatedAt, 1, 0})
		switch {
		case !t.StartedAt.IsZero():
			changes = append(changes, change{t.StartedAt, -1, 1})
			if !t.FinishedAt.IsZero() {
				changes = append(changes, change{t.FinishedAt, 0, -1})
			}
		case !t.FinishedAt.IsZero(): // cancelled before a worker took it
			changes = append(changes, change{t.FinishedAt, -1, 0})
		}
	}
	slices.SortFunc(changes, func(a, b change) int { return b.at.Compare(a.at) }) // newest first
	pending, processing := queue.Pending, queue.Processing
	next := 0
	for i := chartMinutes - 1; i >= 0; i-- {
		end := mins[i].Start.Add(time.Minute) // the current minute's changes are all in the live queue
		for ; i < chartMinutes-1 && next < len(changes) && changes[next].at.After(end); next++ {
			pending -= changes[next].pending
			processing -= changes[next].processing
		}
		mins[i].Pending, mins[i].Processing = max(pending, 0), max(processing, 0)
		mins[i].P50, mins[i].P95 = percentile(gen[i], 50), percentile(gen[i], 95)
	}
	return mins
}

// percentile returns the p-th percentile of ds by nearest rank (0 for
// none); it sorts ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	rank := (p*len(ds) + 99) / 100 // ceil(p/100 * n), 1-based
	return ds[max(rank, 1)-1]
}
