package provider_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// cutShort is a server that accepts every call with a 200 whose body it
// cuts short: it promises 1000 bytes, writes a few, and closes the
// connection, as a provider whose connection was reset mid-answer. It
// counts the calls of each method.
func cutShort(t *testing.T) (posts, gets *atomic.Int32, url string) {
	posts, gets = new(atomic.Int32), new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		} else {
			gets.Add(1)
		}
		answerCut(t, w)
	}))
	t.Cleanup(srv.Close)
	return posts, gets, srv.URL
}

// answerCut takes w's connection over and writes an answer cut short
// (writeCut), then closes the connection.
func answerCut(t *testing.T, w http.ResponseWriter) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	defer conn.Close()
	writeCut(buf)
}

// writeCut writes a 200 whose body ends long before its Content-Length.
func writeCut(buf *bufio.ReadWriter) {
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"id\":\"gen-1\",\"ima")
	_ = buf.Flush()
}

// A POST that the provider answered 2xx, its body cut short, is not sent
// again by Do: the provider took it and charges for it, and a second
// POST would be a second paid generation. The error says so
// (ErrMaybeAccepted) and stays retryable for the service's own
// attempt-level retry.
func TestDoDoesNotRepostACutShortAcceptedAnswer(t *testing.T) {
	is := is.New(t)
	posts, _, url := cutShort(t)
	clock := providertest.NewInstantClock()
	_, err := provider.Do(context.Background(), http.DefaultClient, provider.Post(url, "application/json", []byte(`{}`), nil), policy(clock, 3))
	is.Equal(posts.Load(), int32(1)) // sent once
	is.Equal(len(clock.Waits()), 0)
	me := modelError(t, err)
	is.True(errors.Is(err, provider.ErrMaybeAccepted))
	is.True(me.Retryable)
}

// An idempotent GET (a poll) cut short is retried as before, and so is a
// POST the provider dedupes by its Idempotency-Key.
func TestDoRetriesACutShortAnswerThatIsSafeToRepeat(t *testing.T) {
	is := is.New(t)
	posts, gets, url := cutShort(t)
	clock := providertest.NewInstantClock()
	_, err := provider.Do(context.Background(), http.DefaultClient, provider.Get(url, nil), policy(clock, 2))
	is.True(err != nil)
	is.True(!errors.Is(err, provider.ErrMaybeAccepted))
	is.Equal(gets.Load(), int32(3))

	keyed := http.Header{"Idempotency-Key": {"task-1-attempt-1"}}
	_, err = provider.Do(context.Background(), http.DefaultClient, provider.Post(url, "application/json", []byte(`{}`), keyed), policy(clock, 2))
	is.True(err != nil)
	is.Equal(posts.Load(), int32(3))
}

// A POST that got no answer before the HTTP client's own timeout, after
// it was sent, is not sent again either (the provider may be generating
// still); a GET is.
func TestDoDoesNotRepostAfterTheClientsTimeout(t *testing.T) {
	is := is.New(t)
	var posts, gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		} else {
			gets.Add(1)
		}
		_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client leave
		providertest.Hang(r, nil)
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Timeout: 50 * time.Millisecond}
	clock := providertest.NewInstantClock()
	_, err := provider.Do(context.Background(), client, provider.Post(srv.URL, "application/json", []byte(`{}`), nil), policy(clock, 3))
	is.Equal(posts.Load(), int32(1))
	me := modelError(t, err)
	is.True(errors.Is(err, provider.ErrMaybeAccepted))
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgTimeout)

	_, err = provider.Do(context.Background(), client, provider.Get(srv.URL, nil), policy(clock, 2))
	is.True(err != nil)
	is.Equal(gets.Load(), int32(3))
}

// A POST its caller marked Replayable (an upload under a fixed name,
// with overwrite) is retried after a 2xx answer cut short, as a GET is,
// and the mark sends nothing to the server; an unmarked POST still is
// not.
func TestDoRetriesACutShortPostMarkedReplayable(t *testing.T) {
	is := is.New(t)
	var posts atomic.Int32
	var headers []http.Header
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		mu.Lock()
		headers = append(headers, r.Header.Clone())
		mu.Unlock()
		answerCut(t, w)
	}))
	t.Cleanup(srv.Close)
	clock := providertest.NewInstantClock()
	post := provider.Post(srv.URL, "application/json", []byte(`{}`), http.Header{"X-Test": {"1"}})
	_, err := provider.Do(context.Background(), http.DefaultClient, provider.Replayable(post), policy(clock, 2))
	is.True(err != nil)
	is.True(!errors.Is(err, provider.ErrMaybeAccepted))
	is.True(modelError(t, err).Retryable)
	is.Equal(posts.Load(), int32(3)) // sent, then retried twice
	mu.Lock()
	for _, h := range headers {
		is.Equal(len(h), len(headers[0])) // nothing added to mark it
		is.Equal(h.Get("Idempotency-Key"), "")
	}
	mu.Unlock()

	_, err = provider.Do(context.Background(), http.DefaultClient, post, policy(clock, 2))
	is.True(errors.Is(err, provider.ErrMaybeAccepted))
	is.Equal(posts.Load(), int32(4)) // sent once
}
