package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"
)

// fakeNow is a clock the test moves by hand.
type fakeNow struct{ t time.Time }

func (f *fakeNow) now() time.Time          { return f.t }
func (f *fakeNow) advance(d time.Duration) { f.t = f.t.Add(d) }

func TestProgressPlainLinePerStatusChange(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	clock := &fakeNow{t: time.Unix(1000, 0)}
	p := newProgress(&out, false, clock.now)

	p.Status("pending")
	clock.advance(700 * time.Millisecond)
	p.Tick() // no spinner off a terminal
	p.Status("pending")
	clock.advance(800 * time.Millisecond)
	p.Status("processing")
	p.Status("processing")
	clock.advance(2 * time.Second)
	p.Status("success")
	p.Done()

	is.Equal(out.String(), "status: pending (0.0s)\nstatus: processing (1.5s)\nstatus: success (3.5s)\n")
}

func TestProgressTerminalRedrawsInPlace(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	clock := &fakeNow{t: time.Unix(1000, 0)}
	p := newProgress(&out, true, clock.now)

	p.Tick() // nothing to show before the first status
	is.Equal(out.String(), "")
	p.Status("pending")
	clock.advance(100 * time.Millisecond)
	p.Tick()
	clock.advance(1100 * time.Millisecond)
	p.Status("processing")
	p.Tick()
	p.Done()
	p.Tick() // a late tick after Done draws nothing

	is.Equal(out.String(),
		"\r\x1b[K| pending 0.0s"+
			"\r\x1b[K/ pending 0.1s"+
			"\r\x1b[K/ processing 1.2s"+
			"\r\x1b[K- processing 1.2s"+
			"\r\x1b[K") // erased, so the next message starts on a clean line
	is.True(!strings.Contains(out.String(), "\n")) // one line, never scrolled
}

func TestProgressTellsOfRateLimitWaits(t *testing.T) {
	is := is.New(t)
	var plain, tty bytes.Buffer
	clock := &fakeNow{t: time.Unix(1000, 0)}
	for _, p := range []*progress{newProgress(&plain, false, clock.now), newProgress(&tty, true, clock.now)} {
		p.Status("pending")
		p.RateLimitWait(42 * time.Second)
		p.Tick()
		p.Status("processing") // a new status clears the note
		p.Done()
	}
	is.Equal(plain.String(), "status: pending (0.0s)\nwaiting 42s for the key's rate limit (0.0s)\nstatus: processing (0.0s)\n")
	is.Equal(tty.String(),
		"\r\x1b[K| pending 0.0s"+
			"\r\x1b[K| pending 0.0s (waiting 42s for the key's rate limit)"+
			"\r\x1b[K/ pending 0.0s (waiting 42s for the key's rate limit)"+
			"\r\x1b[K/ processing 0.0s"+
			"\r\x1b[K")
}

// The spinner turns once an interval until stopped. The test runs in a
// synctest bubble, whose clock moves only when every goroutine waits:
// three intervals give exactly three turns, and a second after the stop
// gives none.
func TestProgressSpinTicksUntilStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		var out syncBuffer
		p := newProgress(&out, true, time.Now)
		p.Status("processing")
		before := strings.Count(out.String(), "\r")
		stop := p.spin(time.Millisecond)
		time.Sleep(3 * time.Millisecond)
		synctest.Wait() // the third turn is drawn
		is.Equal(strings.Count(out.String(), "\r")-before, 3)
		stop()
		stop() // a second stop is harmless
		n := len(out.String())
		time.Sleep(time.Second)
		is.Equal(len(out.String()), n) // no tick after stop
		p.Done()
		n = len(out.String())

		plain := newProgress(&out, false, time.Now)
		plain.spin(time.Millisecond)() // off a terminal: no goroutine, nothing drawn
		is.Equal(len(out.String()), n)
	})
}

func TestIsTerminal(t *testing.T) {
	is := is.New(t)
	is.True(!isTerminal(&bytes.Buffer{}))
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	is.NoErr(err)
	defer f.Close()
	is.True(!isTerminal(f)) // a regular file
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		is.True(isTerminal(tty))
	}
}
