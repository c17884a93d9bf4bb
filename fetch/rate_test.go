package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/fetch"
)

// TestMinRate: a host that drips bytes is cut off once it falls behind
// the minimum rate, long before the fetch's timeout, with ErrTooSlow.
func TestMinRate(t *testing.T) {
	is := is.New(t)
	s := dripSite(t, 20*time.Millisecond) // 50 bytes a second
	f, err := fetch.New(fetch.Config{AllowPrivate: true, Timeout: 30 * time.Second, MinRate: 1 << 10, MinRateGrace: 100 * time.Millisecond})
	is.NoErr(err)
	done := make(chan error, 1)
	go func() { _, _, err := f.Fetch(t.Context(), s.URL+"/drip.png"); done <- err }()
	select {
	case err := <-done:
		is.True(errors.Is(err, fetch.ErrTooSlow))
		is.True(fetch.TimedOut(err)) // callers report it as a timeout
		is.Equal(err.Error(), "too slow: under 1024 bytes a second")
	case <-time.After(8 * time.Second): // the timeout is 30 s: it was not what stopped it
		t.Fatal("the drip-fed fetch was not cut off by the minimum rate")
	}

	// A host that sends at a normal pace is not affected (a grace that
	// absorbs a loaded test machine's scheduling).
	f, err = fetch.New(fetch.Config{AllowPrivate: true, Timeout: 30 * time.Second, MinRate: 1 << 10, MinRateGrace: 5 * time.Second})
	is.NoErr(err)
	ok := newSite(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pngOf(64, 64)) })
	data, _, err := f.Fetch(t.Context(), ok.URL+"/a.png")
	is.NoErr(err)
	is.True(len(data) > 0)
}

// TimedOut: a passed deadline or a host too slow, nothing else.
func TestTimedOut(t *testing.T) {
	is := is.New(t)
	is.True(fetch.TimedOut(fmt.Errorf("timed out: %w", context.DeadlineExceeded)))
	is.True(fetch.TimedOut(fmt.Errorf("%w: under 1 bytes a second", fetch.ErrTooSlow)))
	is.True(!fetch.TimedOut(&fetch.StatusError{Code: 504}))
	is.True(!fetch.TimedOut(context.Canceled))
}
