package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// spinnerFrames are drawn in turn, one per tick, on a terminal.
const spinnerFrames = `|/-\`

// progress shows the state of a task while the command waits for it. On
// a terminal it keeps one line, redrawn in place with \r: a spinner, the
// status and the time elapsed. Elsewhere (a file, a pipe, a CI log) it
// writes one plain line per change of status. It is safe for concurrent
// use: a ticker goroutine calls Tick while the waiting one calls Status.
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	now    func() time.Time
	start  time.Time
	status string
	note   string // shown after the status on a terminal until it changes
	frame  int
	drawn  bool // the spinner line is on screen
}

// newProgress starts the clock of a progress display on w; tty selects
// the redrawn spinner line (see isTerminal).
func newProgress(w io.Writer, tty bool, now func() time.Time) *progress {
	return &progress{w: w, tty: tty, now: now, start: now()}
}

// isTerminal reports whether w is a character device, such as the
// terminal a person watches (no dependency: a look at the file's mode).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Status records the task's status: a new plain line when it changed,
// or a redraw of the terminal line.
func (p *progress) Status(status string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := status != p.status
	p.status = status
	if changed {
		p.note = ""
	}
	switch {
	case p.tty:
		p.draw()
	case changed:
		fmt.Fprintf(p.w, "status: %s (%s)\n", status, p.elapsed())
	}
}

// RateLimitWait tells that the client holds its next request back for d
// to keep within the key's rate limit, so that a long wait does not look
// like a hang: on a terminal as a note on the line, elsewhere as a line.
func (p *progress) RateLimitWait(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	note := fmt.Sprintf("waiting %s for the key's rate limit", d.Round(100*time.Millisecond))
	if !p.tty {
		fmt.Fprintf(p.w, "%s (%s)\n", note, p.elapsed())
		return
	}
	p.note = note
	if p.status != "" {
		p.draw()
	}
}

// Tick moves the spinner on and redraws the line; a no-op off a terminal
// or before the first status.
func (p *progress) Tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty || p.status == "" {
		return
	}
	p.frame = (p.frame + 1) % len(spinnerFrames)
	p.draw()
}

// Done erases the terminal line, so that what is written next starts on
// a clean line, and stops further redraws by a late Tick.
func (p *progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
	p.status = ""
}

// spin calls Tick every interval until the returned stop is called; a
// no-op off a terminal. stop waits for the goroutine to end.
func (p *progress) spin(interval time.Duration) (stop func()) {
	if !p.tty {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.Tick()
			}
		}
	})
	return sync.OnceFunc(func() {
		close(done)
		wg.Wait()
	})
}

// draw rewrites the terminal line; p.mu is held.
func (p *progress) draw() {
	fmt.Fprintf(p.w, "\r\x1b[K%c %s %s", spinnerFrames[p.frame], p.status, p.elapsed())
	if p.note != "" {
		fmt.Fprintf(p.w, " (%s)", p.note)
	}
	p.drawn = true
}

func (p *progress) elapsed() string {
	return fmt.Sprintf("%.1fs", p.now().Sub(p.start).Seconds())
}
