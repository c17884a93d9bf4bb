// Package logbuf buffers a process's log lines so that logging one line
// costs no system call: lines are kept in memory and written to the
// underlying writer in batches, when the buffer is full, a short interval
// after the first line of a batch, at every line of level Warn or above
// (through Handler) and when the writer is closed. serve and worker log
// through it (one line per API request would otherwise be one write(2)
// per request).
//
// A line is never split between batches and lines keep their order. What
// is buffered is lost only if the process dies without closing the
// writer (a crash, SIGKILL): at most Config.Interval's worth of lines.
package logbuf

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultSize     = 64 << 10
	DefaultInterval = 100 * time.Millisecond
)

// Config configures a Writer. Every field has a default.
type Config struct {
	// Size is how many bytes are buffered before they are written
	// (default DefaultSize). A single line longer than that is written
	// at once, after what was buffered before it.
	Size int
	// Interval is the longest a line waits in the buffer (default
	// DefaultInterval).
	Interval time.Duration
}

// Writer is an io.Writer that buffers what it is given; each Write is
// expected to be one whole log line, as slog's handlers write them. It is
// safe for concurrent use.
type Writer struct {
	out      io.Writer
	size     int
	interval time.Duration

	mu     sync.Mutex
	buf    []byte
	timer  *time.Timer // flushes a batch Interval after its first line; armed while buf holds lines
	armed  bool
	closed bool // after Close, writes go straight to out
}

// New returns a Writer that writes to out.
func New(out io.Writer, cfg Config) *Writer {
	w := &Writer{out: out, size: cmp.Or(cfg.Size, DefaultSize), interval: cmp.Or(cfg.Interval, DefaultInterval)}
	w.buf = make([]byte, 0, w.size)
	w.timer = time.AfterFunc(time.Hour, w.onTimer)
	w.timer.Stop()
	return w
}

// Write buffers p, writing the buffer out first when p does not fit. It
// reports the error of a write to the underlying writer made during the
// call; lines of a failed write are dropped (a log must not grow without
// bound because its destination is gone).
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.out.Write(p)
	}
	var err error
	if len(w.buf)+len(p) > w.size {
		err = w.flushLocked()
		if len(p) > w.size {
			if _, werr := w.out.Write(p); werr != nil {
				return 0, werr
			}
			return len(p), err
		}
	}
	w.buf = append(w.buf, p...)
	if !w.armed {
		w.armed = true
		w.timer.Reset(w.interval)
	}
	return len(p), err
}

// Flush writes what is buffered.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

// Close writes what is buffered and stops buffering: later writes (the
// last lines of a shutdown) go straight to the underlying writer. It does
// not close that writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return w.flushLocked()
}

func (w *Writer) onTimer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.flushLocked()
}

func (w *Writer) flushLocked() error {
	if w.armed {
		w.timer.Stop()
		w.armed = false
	}
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.out.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// Log logs a record of level with msg and attrs through log, as
// log.LogAttrs does, but without looking up the caller's source line (a
// walk of the stack per record, which LogAttrs makes for handlers that
// show the source): for the lines of hot paths, logged once per request
// or task, whose source says nothing.
func Log(ctx context.Context, log *slog.Logger, level slog.Level, msg string, attrs ...slog.Attr) {
	LogAt(ctx, log, time.Now(), level, msg, attrs...)
}

// LogAt is Log with the record's time given: a caller that has just read
// the clock (to time a request) need not read it again.
func LogAt(ctx context.Context, log *slog.Logger, at time.Time, level slog.Level, msg string, attrs ...slog.Attr) {
	if log.Enabled(ctx, level) {
		LogEnabledAt(ctx, log, at, level, msg, attrs...)
	}
}

// LogEnabledAt is LogAt for a caller that has just asked log.Enabled(ctx,
// level) and been told yes (the API asks once a request, to know
// whether to gather what the line says): it does not ask again.
func LogEnabledAt(ctx context.Context, log *slog.Logger, at time.Time, level slog.Level, msg string, attrs ...slog.Attr) {
	if lineWritten(log.Handler(), at, level, msg, attrs) {
		return
	}
	r := slog.NewRecord(at, level, msg, 0)
	r.AddAttrs(attrs...)
	_ = log.Handler().Handle(ctx, r) // a line that cannot be written is no reason to fail the caller
}

// lineWritten writes the line through h without making a record when h
// is NewTextHandler's (alone or under Handler) and the attributes are of
// the kinds it writes itself.
func lineWritten(h slog.Handler, at time.Time, level slog.Level, msg string, attrs []slog.Attr) bool {
	var flush *Writer
	if f, ok := h.(flushing); ok {
		h, flush = f.Handler, f.w
	}
	th, ok := h.(*textHandler)
	if !ok {
		return false
	}
	if handled, _ := th.handleAttrs(at, level, msg, attrs); !handled {
		return false
	}
	if flush != nil && level >= slog.LevelWarn {
		_ = flush.Flush()
	}
	return true
}

// Duration is an attribute whose value reads d.String() in the lines of
// h: slog.Duration when h is NewTextHandler's (alone or under Handler),
// which writes it so (as slog's text handler does) without making the
// string; otherwise slog.String of d.String(), so that every handler
// writes the same text (slog's JSON handler writes a Duration as
// nanoseconds).
func Duration(h slog.Handler, key string, d time.Duration) slog.Attr {
	if f, ok := h.(flushing); ok {
		h = f.Handler
	}
	if _, ok := h.(*textHandler); ok {
		return slog.Duration(key, d)
	}
	return slog.String(key, d.String())
}

// Handler wraps h, which writes to w, so that every record of level Warn
// or above is written out at once (with the lines buffered before it):
// warnings and errors are not held back, nor lost if the process then
// crashes.
func Handler(h slog.Handler, w *Writer) slog.Handler {
	return flushing{Handler: h, w: w}
}

type flushing struct {
	slog.Handler
	w *Writer
}

func (f flushing) Handle(ctx context.Context, r slog.Record) error {
	err := f.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := f.w.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (f flushing) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushing{Handler: f.Handler.WithAttrs(attrs), w: f.w}
}

func (f flushing) WithGroup(name string) slog.Handler {
	return flushing{Handler: f.Handler.WithGroup(name), w: f.w}
}
