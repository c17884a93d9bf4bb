package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/client"
)

// instantClock's waits end at once.
type instantClock struct{}

func (instantClock) Now() time.Time { return time.Now() }

func (instantClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- time.Now()
	return ch
}

// An answer whose body breaks off (the connection closed after its
// headers) is no answer, as a refused connection is: Wait polls again,
// where it stopped at the first such poll.
func TestWaitRetriesAnAnswerThatBreaksOff(t *testing.T) {
	is := is.New(t)
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if polls.Add(1) == 1 {
			w.Header().Set("Content-Length", "200")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"task_id":"t1","sta`))
			w.(http.Flusher).Flush()    // the headers and a part of the body go out
			panic(http.ErrAbortHandler) // closes the connection: the body breaks off
		}
		_, _ = w.Write([]byte(`{"task_id":"t1","status":"success","images":["https://img.example.test/i/1.png"]}`))
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "key-0123456789abcdef", client.WithClock(instantClock{}))
	is.NoErr(err)
	task, err := c.Wait(context.Background(), "t1")
	is.NoErr(err)
	is.Equal(string(task.Status), "success")
	is.Equal(polls.Load(), int32(2))
}

// A broken-off answer is transient, as IsTransient tells a program that
// polls on its own.
func TestIsTransientTakesABrokenOffAnswer(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "200")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"task_id"`))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "key-0123456789abcdef")
	is.NoErr(err)
	_, err = c.Task(context.Background(), "t1")
	is.True(err != nil)
	is.True(client.IsTransient(err))
}
