package fetch_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/fetch"
)

// upgrader is a loopback host that answers every request with 101
// Switching Protocols and then sends nothing more until the test ends.
// net/http hands such an answer's connection over as its body and stops
// watching the request's context, so a read of that body that is not
// bounded otherwise would wait for as long as the host likes.
func upgrader(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		_ = buf.Flush()
		<-release
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first
	return srv.URL
}

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
	url := upgrader(t)
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
