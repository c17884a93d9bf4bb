package client

import (
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/imagegentest"
)

func TestParseRateLimit(t *testing.T) {
	for v, want := range map[string]struct {
		r     int
		reset time.Duration
		ok    bool
	}{
		`"default";r=9;t=0`:                    {9, 0, true},
		`"default";r=0;t=51`:                   {0, 51 * time.Second, true},
		`"default"; r=2 ; t=0`:                 {2, 0, true},
		`"burst";r=5;t=0, "daily";r=1;t=0`:     {1, 0, true}, // the tightest policy counts
		`"a";r=0;t=5, "b";r=0;t=30`:            {0, 30 * time.Second, true},
		`"default";t=3`:                        {0, 0, false},
		`"default";r=x;t=3`:                    {0, 0, false},
		`"default";r=-1;t=3`:                   {0, 0, false},
		``:                                     {0, 0, false},
		`"default";r=99999999999999999999;t=0`: {0, 0, false},
	} {
		r, reset, ok := parseRateLimit(v)
		if r != want.r || reset != want.reset || ok != want.ok {
			t.Errorf("parseRateLimit(%q) = %d, %v, %v; want %d, %v, %v", v, r, reset, ok, want.r, want.reset, want.ok)
		}
	}
}

func TestLongPollApplied(t *testing.T) {
	is := is.New(t)
	is.True(longPollApplied(http.Header{"Preference-Applied": {"wait=25"}}))
	is.True(longPollApplied(http.Header{"Preference-Applied": {"return=minimal, Wait=10"}}))
	is.True(!longPollApplied(http.Header{"Preference-Applied": {"return=minimal"}}))
	is.True(!longPollApplied(http.Header{}))
}

func rateLimit(r, t string) http.Header {
	return http.Header{"Ratelimit": {`"default";r=` + r + ";t=" + t}}
}

func TestBudgetProbesFirst(t *testing.T) {
	is := is.New(t)
	b := newBudget(imagegentest.NewClock(time.Time{}))
	first, _, _ := b.take()
	is.True(first != nil)
	second, wait, changed := b.take()
	is.True(second == nil) // nothing is known yet: one request at a time
	is.Equal(wait, time.Duration(0))
	b.release(first, http.StatusOK, rateLimit("2", "0"))
	select {
	case <-changed:
	default:
		t.Fatal("release did not signal")
	}
	a, _, _ := b.take()
	c, _, _ := b.take()
	is.True(a != nil && c != nil) // r=2: two at once
	d, _, _ := b.take()
	is.True(d == nil)
}

// Answers of overlapping requests can arrive in any order, so the budget
// must not trust the larger r of an older answer.
func TestBudgetOverlappingAnswers(t *testing.T) {
	is := is.New(t)
	b := newBudget(imagegentest.NewClock(time.Time{}))
	probe, _, _ := b.take()
	b.release(probe, http.StatusOK, rateLimit("3", "0"))
	a, _, _ := b.take()
	c, _, _ := b.take()
	is.True(a != nil && c != nil)
	// The server counted a, then c (r=2, then 1), but c's answer comes first.
	b.release(c, http.StatusOK, rateLimit("1", "0"))
	b.release(a, http.StatusOK, rateLimit("2", "0"))
	d, _, _ := b.take()
	is.True(d != nil) // one is left
	e, _, _ := b.take()
	is.True(e == nil) // and only one
	b.release(d, http.StatusOK, rateLimit("0", "40"))
	_, wait, _ := b.take()
	is.Equal(wait, 40*time.Second)
}

func TestBudgetBlocksOnRateLimit(t *testing.T) {
	is := is.New(t)
	clock := imagegentest.NewClock(time.Time{})
	b := newBudget(clock)
	tk, _, _ := b.take()
	b.release(tk, http.StatusOK, rateLimit("0", "30"))
	_, wait, _ := b.take()
	is.Equal(wait, 30*time.Second)
	clock.Advance(30 * time.Second)
	tk, _, _ = b.take()
	is.True(tk != nil) // a probe once t has passed
	h := rateLimit("0", "20")
	h.Set("Retry-After", "45")
	b.release(tk, http.StatusTooManyRequests, h)
	_, wait, _ = b.take()
	is.Equal(wait, 45*time.Second) // the later of the two
	clock.Advance(45 * time.Second)
	tk, _, _ = b.take()
	b.release(tk, http.StatusTooManyRequests, http.Header{}) // no Retry-After at all
	_, wait, _ = b.take()
	is.Equal(wait, time.Second)
}

func TestBudgetUnmetered(t *testing.T) {
	is := is.New(t)
	b := newBudget(imagegentest.NewClock(time.Time{}))
	tk, _, _ := b.take()
	b.release(tk, http.StatusUnauthorized, http.Header{})
	tk, _, _ = b.take()
	is.True(tk != nil)
	busy, _, _ := b.take()
	is.True(busy == nil) // an error without headers says nothing about the limit
	b.release(tk, http.StatusOK, http.Header{})
	for range 5 { // a server that sends no RateLimit: no client-side limit
		tk, _, _ = b.take()
		is.True(tk != nil)
	}
}

// A wait the server asks for (Retry-After, or a RateLimit reset) holds
// the Client's every goroutine back, so it is capped at maxLimitWait:
// one answer of a proxy that says "a day", or a Retry-After of 10^9
// seconds, must not stop every call of the Client for that long (past
// the cap, one probe asks again). The imagegen server asks for a minute
// at most.
func TestBudgetCapsTheWaitAServerAsksFor(t *testing.T) {
	is := is.New(t)
	clock := imagegentest.NewClock(time.Time{})
	b := newBudget(clock)
	tk, _, _ := b.take()
	h := http.Header{}
	h.Set("Retry-After", "1000000000")
	b.release(tk, http.StatusTooManyRequests, h)
	_, wait, _ := b.take()
	is.Equal(wait, maxLimitWait)

	clock.Advance(maxLimitWait)
	tk, _, _ = b.take()
	is.True(tk != nil) // the probe
	b.release(tk, http.StatusOK, rateLimit("0", "2147483647"))
	_, wait, _ = b.take()
	is.Equal(wait, maxLimitWait)

	clock.Advance(maxLimitWait)
	tk, _, _ = b.take()
	h = http.Header{}
	h.Set("Retry-After", clock.Now().Add(24*time.Hour).Format(http.TimeFormat))
	b.release(tk, http.StatusTooManyRequests, h)
	_, wait, _ = b.take()
	is.Equal(wait, maxLimitWait)
}
