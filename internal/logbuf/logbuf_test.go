package logbuf_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagegen/imagegen/internal/logbuf"
	"github.com/imagegen/imagegen/internal/testenv"
)

// sink records each write it gets, as the underlying writer.
type sink struct {
	mu     sync.Mutex
	writes []string
	err    error
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	s.writes = append(s.writes, string(p))
	return len(p), nil
}

func (s *sink) all() (writes []string, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.writes...), strings.Join(s.writes, "")
}

func TestLinesWaitUntilFlushOrClose(t *testing.T) {
	out := &sink{}
	w := logbuf.New(out, logbuf.Config{Interval: time.Hour})
	for i := range 3 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if writes, _ := out.all(); len(writes) != 0 {
		t.Fatalf("lines were written before a flush: %q", writes)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if writes, text := out.all(); len(writes) != 1 || text != "line 0\nline 1\nline 2\n" {
		t.Fatalf("after Flush: %q, want the three lines in one write", writes)
	}
	fmt.Fprintln(w, "last")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, text := out.all(); !strings.HasSuffix(text, "line 2\nlast\n") {
		t.Fatalf("Close did not write what was left: %q", text)
	}
	fmt.Fprintln(w, "after close") // written at once from now on
	if _, text := out.all(); !strings.HasSuffix(text, "last\nafter close\n") {
		t.Fatalf("a line after Close waited: %q", text)
	}
}

func TestIntervalWritesABatch(t *testing.T) {
	out := &sink{}
	w := logbuf.New(out, logbuf.Config{Interval: 5 * time.Millisecond})
	defer w.Close()
	fmt.Fprintln(w, "first")
	testenv.Eventually(t, 10*time.Second, "the interval writes the first line", func() bool { _, text := out.all(); return text == "first\n" })
	fmt.Fprintln(w, "second") // the next batch gets its own interval
	testenv.Eventually(t, 10*time.Second, "the interval writes the second line", func() bool { _, text := out.all(); return text == "first\nsecond\n" })
}

func TestFullBufferIsWrittenWithoutSplittingLines(t *testing.T) {
	out := &sink{}
	w := logbuf.New(out, logbuf.Config{Size: 20, Interval: time.Hour})
	for i := range 10 {
		fmt.Fprintf(w, "line %02d\n", i) // 8 bytes: two fit, the third does not
	}
	long := strings.Repeat("x", 30) + "\n"
	fmt.Fprint(w, long)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	writes, _ := out.all()
	var want []string
	for i := 0; i < 10; i += 2 {
		want = append(want, fmt.Sprintf("line %02d\nline %02d\n", i, i+1))
	}
	want = append(want, long)
	if fmt.Sprint(writes) != fmt.Sprint(want) {
		t.Fatalf("writes %q, want %q", writes, want)
	}
}

func TestFailedWriteDropsTheBatch(t *testing.T) {
	out := &sink{err: errors.New("disk gone")}
	w := logbuf.New(out, logbuf.Config{Size: 16, Interval: time.Hour})
	fmt.Fprintln(w, "0123456789")
	if _, err := fmt.Fprintln(w, "0123456789"); err == nil {
		t.Fatal("the failed write of the full buffer was not reported")
	}
	out.mu.Lock()
	out.err = nil
	out.mu.Unlock()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if writes, text := out.all(); text != "0123456789\n" {
		t.Fatalf("after the failure the buffer held %q (%d writes), want only the line after it", text, len(writes))
	}
}

func TestConcurrentLinesStayWhole(t *testing.T) {
	out := &sink{}
	w := logbuf.New(out, logbuf.Config{Size: 256, Interval: time.Millisecond})
	log := slog.New(slog.NewTextHandler(w, nil))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				log.Info("request", "g", g, "i", i)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, text := out.all()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 8*200 {
		t.Fatalf("%d lines, want %d", len(lines), 8*200)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		_, rest, ok := strings.Cut(l, "msg=request g=")
		if !ok || seen[rest] {
			t.Fatalf("line broken or repeated: %q", l)
		}
		seen[rest] = true
	}
}

func TestHandlerWritesWarningsAtOnce(t *testing.T) {
	out := &sink{}
	w := logbuf.New(out, logbuf.Config{Interval: time.Hour})
	log := slog.New(logbuf.Handler(slog.NewTextHandler(w, nil), w)).With("proc", "api").WithGroup("g")
	log.Info("routine")
	if writes, _ := out.all(); len(writes) != 0 {
		t.Fatalf("an info line was written at once: %q", writes)
	}
	log.Warn("trouble", "n", 1)
	_, text := out.all()
	if !strings.Contains(text, "msg=routine proc=api") || !strings.Contains(text, "msg=trouble proc=api g.n=1") {
		t.Fatalf("a warning did not write itself and what waited before it: %q", text)
	}
}

// BenchmarkLogLine is one request's log line through slog's text
// handler to a file, written at once (a write(2) per line) and buffered.
func BenchmarkLogLine(b *testing.B) {
	for _, buffered := range []bool{false, true} {
		b.Run(fmt.Sprintf("buffered=%v", buffered), func(b *testing.B) {
			f, err := os.CreateTemp(b.TempDir(), "log")
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var w io.Writer = f
			if buffered {
				bw := logbuf.New(f, logbuf.Config{})
				defer bw.Close()
				w = bw
			}
			log := slog.New(slog.NewTextHandler(w, nil))
			b.ReportAllocs()
			for b.Loop() {
				log.LogAttrs(b.Context(), slog.LevelInfo, "request", slog.String("method", "GET"), slog.Int("status", 200))
			}
		})
	}
}

// Log writes the record as LogAttrs would, without a source line even
// for a handler that shows one, and nothing below the logger's level.
func TestLogHasNoSource(t *testing.T) {
	out := &sink{}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{AddSource: true, Level: slog.LevelInfo}))
	logbuf.Log(t.Context(), log, slog.LevelDebug, "hidden")
	logbuf.Log(t.Context(), log, slog.LevelInfo, "request", slog.String("route", "/x"), slog.Int("status", 200))
	_, text := out.all()
	if strings.Contains(text, "hidden") || !strings.Contains(text, "msg=request route=/x status=200") {
		t.Fatalf("logged %q", text)
	}
	if strings.Contains(text, "source=") && !strings.Contains(text, "source=:0") {
		t.Fatalf("a source line was looked up: %q", text)
	}
}
