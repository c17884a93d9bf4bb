package console

import (
	"slices"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

func TestPercentileByNearestRank(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted
	}
	for _, tc := range []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{ms(7), 50, 7 * time.Millisecond},
		{ms(7), 95, 7 * time.Millisecond},
		{ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{ms(4, 1, 3, 2), 95, 4 * time.Millisecond},
		{ms(hundred...), 50, 50 * time.Millisecond},
		{ms(hundred...), 95, 95 * time.Millisecond},
	} {
		if got := percentile(slices.Clone(tc.in), tc.p); got != tc.want {
			t.Errorf("p%d of %v = %v, want %v", tc.p, tc.in, got, tc.want)
		}
	}
}

// lastHour counts each minute's finished tasks by how, takes the
// generation times of its successes, and walks the queue back from its
// live state.
func TestLastHourMinuteByMinute(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 30, 0, time.UTC) // 30 s into the current minute
	at := func(minutesAgo, seconds int) time.Time {
		return now.Truncate(time.Minute).Add(time.Duration(-minutesAgo)*time.Minute + time.Duration(seconds)*time.Second)
	}
	tasks := []*imagegen.Task{
		// Ten minutes ago: two successes (1 s and 3 s of generation), one failure.
		{Status: imagegen.StatusSuccess, CreatedAt: at(11, 5), StartedAt: at(10, 1), FinishedAt: at(10, 2)},
		{Status: imagegen.StatusSuccess, CreatedAt: at(11, 5), StartedAt: at(10, 3), FinishedAt: at(10, 6)},
		{Status: imagegen.StatusFailed, ErrorCode: imagegen.CodeInternal, CreatedAt: at(11, 8), StartedAt: at(10, 10), FinishedAt: at(10, 20)},
		// Cancelled while queued, five minutes ago.
		{Status: imagegen.StatusFailed, ErrorCode: imagegen.CodeCancelled, CreatedAt: at(7, 10), FinishedAt: at(5, 10)},
		// Running since two minutes ago (queued a minute before); queued since a minute ago.
		{Status: imagegen.StatusProcessing, CreatedAt: at(3, 10), StartedAt: at(2, 10)},
		{Status: imagegen.StatusPending, CreatedAt: at(1, 10)},
		// Finished two hours ago: outside the chart.
		{Status: imagegen.StatusSuccess, CreatedAt: now.Add(-2 * time.Hour), StartedAt: now.Add(-2 * time.Hour), FinishedAt: now.Add(-119 * time.Minute)},
	}
	mins := lastHour(tasks, imagegen.QueueStats{Pending: 1, Processing: 1}, now)
	if len(mins) != chartMinutes || !mins[chartMinutes-1].Start.Equal(now.Truncate(time.Minute)) {
		t.Fatalf("%d minutes, the last from %v", len(mins), mins[len(mins)-1].Start)
	}
	get := func(minutesAgo int) minute { return mins[chartMinutes-1-minutesAgo] }
	if m := get(10); m.Succeeded != 2 || m.Failed != 1 || m.Cancelled != 0 || m.P50 != time.Second || m.P95 != 3*time.Second {
		t.Errorf("ten minutes ago: %+v", m)
	}
	if m := get(5); m.Cancelled != 1 || m.Succeeded+m.Failed != 0 || m.P50 != 0 {
		t.Errorf("five minutes ago: %+v", m)
	}
	total := 0
	for _, m := range mins {
		total += m.Succeeded + m.Failed + m.Cancelled
	}
	if total != 4 {
		t.Errorf("%d finished in the hour, want 4 (not the one two hours ago)", total)
	}
	// The queue at each minute's end.
	for minutesAgo, want := range map[int][2]int64{ // minute k ago ends at at(k-1, 0)
		0:  {1, 1}, // live
		1:  {1, 1},
		2:  {0, 1},
		3:  {1, 0},
		4:  {0, 0},
		5:  {0, 0}, // the cancelled one left in this minute
		6:  {1, 0},
		7:  {1, 0},
		8:  {0, 0},
		10: {0, 0},
		11: {3, 0}, // three created, none started
		12: {0, 0},
		59: {0, 0},
	} {
		if m := get(minutesAgo); m.Pending != want[0] || m.Processing != want[1] {
			t.Errorf("%d minutes ago: pending %d, processing %d; want %v", minutesAgo, m.Pending, m.Processing, want)
		}
	}
}
