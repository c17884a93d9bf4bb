package logbuf_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen/internal/logbuf"
)

// Duration reads d.String() in every handler's lines: logbuf's text
// handler (alone, under Handler, or derived by WithGroup, which is
// slog's), slog's text handler and slog's JSON handler, which would
// write a slog.Duration as nanoseconds.
func TestDurationReadsAsText(t *testing.T) {
	const d = 6973 * time.Nanosecond
	w := logbuf.New(&bytes.Buffer{}, logbuf.Config{Interval: time.Hour})
	defer w.Close()
	for _, tc := range []struct {
		name string
		make func(*bytes.Buffer) slog.Handler
		want string
	}{
		{"logbuf text", func(b *bytes.Buffer) slog.Handler { return logbuf.NewTextHandler(b, nil) }, "duration=6.973µs"},
		{"logbuf text under Handler", func(b *bytes.Buffer) slog.Handler {
			return logbuf.Handler(logbuf.NewTextHandler(b, nil), w)
		}, "duration=6.973µs"},
		{"logbuf text in a group", func(b *bytes.Buffer) slog.Handler { return logbuf.NewTextHandler(b, nil).WithGroup("g") }, "g.duration=6.973µs"},
		{"slog text", func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }, "duration=6.973µs"},
		{"slog JSON", func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) }, `"duration":"6.973µs"`},
	} {
		var buf bytes.Buffer
		h := tc.make(&buf)
		logbuf.LogEnabledAt(context.Background(), slog.New(h), time.Time{}, slog.LevelInfo, "request", logbuf.Duration(h, "duration", d))
		if !strings.Contains(buf.String(), tc.want) {
			t.Errorf("%s: wrote %q, want %s in it", tc.name, buf.String(), tc.want)
		}
	}
}

// Through logbuf's text handler, the duration of a line costs no
// allocation (d.String() would make one).
func TestDurationAllocations(t *testing.T) {
	w := logbuf.New(discard{}, logbuf.Config{Interval: time.Hour})
	defer w.Close()
	log := slog.New(logbuf.Handler(logbuf.NewTextHandler(w, nil), w))
	d := 6973 * time.Nanosecond
	if n := testing.AllocsPerRun(1000, func() {
		logbuf.LogEnabledAt(context.Background(), log, time.Time{}, slog.LevelInfo, "request", logbuf.Duration(log.Handler(), "duration", d))
		d++
	}); n != 0 {
		t.Fatalf("%v allocations per line", n)
	}
}
