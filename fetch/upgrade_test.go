package fetch_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/internal/testenv"
)

// within runs f and fails the test when it has not returned after limit.
func within(t *testing.T, limit time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("still running after %v", limit)
	}
}

func TestSwitchingProtocolsAnswerIsBoundedByTheTimeout(t *testing.T) {
	url := testenv.SilentUpgrader(t)
	f, err := fetch.New(fetch.Config{AllowPrivate: true, Timeout: 200 * time.Millisecond})
	is.New(t).NoErr(err)

	t.Run("Post", func(t *testing.T) {
		var status int
		var err error
		within(t, 3*time.Second, func() {
			status, err = f.Post(context.Background(), url+"/hook", nil, []byte("{}"))
		})
		is := is.New(t)
		is.NoErr(err)
		is.Equal(status, http.StatusSwitchingProtocols) // not a 2xx: the dispatcher retries it
	})
	t.Run("Post, the caller's deadline", func(t *testing.T) {
		long, err := fetch.New(fetch.Config{AllowPrivate: true, Timeout: time.Hour})
		is.New(t).NoErr(err)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		within(t, 3*time.Second, func() { _, _ = long.Post(ctx, url+"/hook", nil, nil) })
	})
	t.Run("Fetch", func(t *testing.T) {
		var err error
		within(t, 3*time.Second, func() { _, _, err = f.Fetch(context.Background(), url+"/a.png") })
		is.New(t).True(errors.Is(err, fetch.ErrStatus))
	})
}
