package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/imagegentest"
)

var fox = imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a red fox", AspectRatio: imagegen.Aspect16x9}

func isGet(a arrival) bool { return a.method == http.MethodGet && strings.Contains(a.path, "/tasks/") }

func TestSubmitTaskWaitDownload(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		ctx := context.Background()
		sl := &sleepLog{}
		c := e.client(client.WithUserAgent("client-test/1"), client.WithClock(sl))

		sub, err := c.Submit(ctx, fox)
		is.NoErr(err)
		is.Equal(sub.Status, imagegen.StatusPending)
		is.Equal(sub.CreditsUsed, int64(2))
		is.Equal(sub.CreditsRemaining, int64(8))
		is.True(sub.TaskID != "")

		task, err := c.Task(ctx, sub.TaskID)
		is.NoErr(err)
		is.Equal(*task, client.Task{TaskID: sub.TaskID, Status: imagegen.StatusPending})
		is.NoErr(task.Err())

		e.runWorkers()
		task, err = c.Wait(ctx, sub.TaskID)
		is.NoErr(err)
		is.Equal(task.Status, imagegen.StatusSuccess)
		is.Equal(task.TaskID, sub.TaskID)
		is.Equal(len(task.Images), 1)
		is.Equal(task.Error, "")
		is.Equal(len(sl.sleeps()), 0) // the task had ended: Wait polled once

		var png bytes.Buffer
		is.NoErr(c.Download(ctx, task.Images[0], &png))
		is.Equal(png.Bytes(), imagegentest.TinyPNG())

		log := e.log()
		is.Equal(len(log), 4)
		is.Equal(log[0].method, "POST")
		is.Equal(log[0].path, "/api/v1/generate")
		is.Equal(log[0].status, http.StatusCreated)
		is.Equal(log[0].header.Get("Content-Type"), "application/json")
		for _, a := range log[:3] {
			is.Equal(a.header.Get("Authorization"), "Bearer "+e.key)
			is.Equal(a.header.Get("User-Agent"), "client-test/1")
		}
		is.Equal(log[1].header.Get("Prefer"), "")        // Task asks for no long poll
		is.Equal(log[2].header.Get("Prefer"), "wait=25") // Wait does
		is.True(strings.HasPrefix(log[3].path, "/api/v1/images/"))
		is.Equal(log[3].header.Get("Authorization"), "") // image URLs need no key: it is not sent
		is.Equal(log[3].status, http.StatusOK)
	})
}

// TestWaitLongPolls: the real handler holds each poll up to 25 s (Prefer:
// wait=25) and answers as soon as the task ends; the client polls again at
// once, without sleeping.
func TestWaitLongPolls(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		sl := &sleepLog{}
		c := e.client(client.WithClock(sl))
		sub, err := c.Submit(context.Background(), fox)
		is.NoErr(err)
		start := time.Now()
		e.finishAfter(time.Minute)
		task, err := c.Wait(context.Background(), sub.TaskID)
		is.NoErr(err)
		is.Equal(task.Status, imagegen.StatusSuccess)
		is.Equal(time.Since(start), time.Minute) // answered the moment it ended
		is.Equal(len(sl.sleeps()), 0)            // the server did the waiting
		gets := only(e.log(), isGet)
		is.Equal(len(gets), 3) // at 0, 25 and 50 s
		for i, a := range gets {
			is.Equal(a.at.Sub(start), time.Duration(i)*25*time.Second)
			is.Equal(a.header.Get("Prefer"), "wait=25")
		}
	})
}

// TestWaitBacksOffWhenLongPollsReturnAtOnce: a server that says it applied
// the wait but answers at once does not make Wait poll in a tight loop.
func TestWaitBacksOffWhenLongPollsReturnAtOnce(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		e.setWrap(func(next http.Handler) http.Handler {
			return ignorePrefer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Preference-Applied", "wait=25")
				next.ServeHTTP(w, r)
			}))
		})
		sl := &sleepLog{}
		c := e.client(client.WithClock(sl))
		task := waitOut(t, e, c, 5*time.Second)
		is.Equal(task.Status, imagegen.StatusSuccess)
		is.Equal(sl.sleeps(), []time.Duration{time.Second, 2 * time.Second, 4 * time.Second})
	})
}

// TestWaitBacksOffWhenPreferIgnored: a server without the long-poll
// extension ignores Prefer, and Wait polls with a growing interval.
func TestWaitBacksOffWhenPreferIgnored(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		e.setWrap(ignorePrefer)
		sl := &sleepLog{}
		c := e.client(client.WithClock(sl))
		task := waitOut(t, e, c, 15*time.Second)
		is.Equal(task.Status, imagegen.StatusSuccess)
		is.Equal(sl.sleeps(), []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 6 * time.Second, 6 * time.Second})
		gets := only(e.log(), isGet)
		is.Equal(len(gets), 6) // at 0, 1, 3, 7, 13 and 19 s
		for _, a := range gets {
			is.Equal(a.header.Get("Prefer"), "wait=25") // harmless: ignored
		}
	})
}

func TestWaitFailedTask(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		c := e.client()
		e.model.Then(imagegentest.Fail(&imagegen.ModelError{Provider: "scripted", Refused: true, Message: "the prompt was blocked"}))
		task := waitOut(t, e, c, 10*time.Second) // a failed task is not an API error
		is.Equal(task.Status, imagegen.StatusFailed)
		is.True(strings.Contains(task.Error, "the prompt was blocked"))
		is.Equal(task.Images, nil)
		is.True(errors.Is(task.Err(), client.ErrTaskFailed))
		is.True(strings.Contains(task.Err().Error(), "the prompt was blocked"))
		is.Equal(task.ErrorCode, imagegen.CodeContentPolicy)
	})
}

func TestGenerate(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		sl := &sleepLog{}
		c := e.client(client.WithClock(sl))
		e.finishAfter(500 * time.Millisecond)
		task, err := c.Generate(context.Background(), fox)
		is.NoErr(err)
		is.Equal(task.Status, imagegen.StatusSuccess)
		is.Equal(len(task.Images), 1)
		is.Equal(sl.sleeps(), []time.Duration{time.Second}) // one interval before the first poll
		log := e.log()
		is.Equal(len(log), 2)
		is.Equal(log[0].method, "POST")
		is.Equal(log[1].method, "GET")
		bal, err := e.svc.Balance(context.Background(), "alice")
		is.NoErr(err)
		is.Equal(bal, int64(8))
	})
}

func TestGenerateWaitsOut429OnSubmit(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		c := e.client()
		e.spend(e.key, 3) // another program used the key's budget
		e.finishAfter(2 * time.Minute)
		task, err := c.Generate(context.Background(), fox)
		is.NoErr(err)
		is.Equal(task.Status, imagegen.StatusSuccess)
		log := e.log()
		is.Equal(log[0].status, http.StatusTooManyRequests)
		is.Equal(log[1].status, http.StatusCreated)
		is.Equal(log[1].at.Sub(log[0].at), time.Minute) // after Retry-After, not before
		is.Equal(len(only(log, func(a arrival) bool { return a.status == http.StatusTooManyRequests })), 1)
		bal, err := e.svc.Balance(context.Background(), "alice")
		is.NoErr(err)
		is.Equal(bal, int64(8)) // charged once
	}, withLimit(3))
}

// TestErrorCodes maps every error code of docs/api.md, "Errors" (and the
// handler's extra ones) to its sentinel, keeping the server's message.
func TestErrorCodes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		opts     []func(*envOptions)
		call     func(e *env, c *client.Client) error
		status   int
		code     string
		sentinel error // nil: none of the sentinels
		message  string
	}{{
		name: "unauthorized",
		call: func(e *env, c *client.Client) error {
			_, err := e.clientFor(e.base, imagegen.NewAPIKey()).Task(ctx, "x")
			return err
		},
		status: 401, code: "unauthorized", sentinel: imagegen.ErrUnauthorized, message: "missing or invalid API key",
	}, {
		name: "insufficient credits",
		call: func(e *env, c *client.Client) error {
			_, err := e.clientFor(e.base, e.user("carol", 1)).Submit(ctx, fox)
			return err
		},
		status: 403, code: "insufficient_credits", sentinel: imagegen.ErrInsufficientCredits, message: "not enough credits for this generation",
	}, {
		name: "task not found",
		call: func(e *env, c *client.Client) error {
			_, err := c.Task(ctx, "00000000-0000-4000-8000-000000000000")
			return err
		},
		status: 404, code: "task_not_found", sentinel: imagegen.ErrTaskNotFound, message: "task not found",
	}, {
		name: "another user's task",
		call: func(e *env, c *client.Client) error {
			id := submitEach(e.t, c, fox, 1)[0]
			_, err := e.clientFor(e.base, e.user("mallory", 0)).Wait(ctx, id)
			return err
		},
		status: 404, code: "task_not_found", sentinel: imagegen.ErrTaskNotFound, message: "task not found",
	}, {
		name: "invalid params",
		call: func(e *env, c *client.Client) error {
			_, err := c.Submit(ctx, imagegen.Request{Scene: "text-to-image"})
			return err
		},
		status: 422, code: "invalid_params", sentinel: imagegen.ErrInvalidParams, message: "prompt: is required",
	}, {
		name: "rate limit exceeded",
		opts: []func(*envOptions){withLimit(3)},
		call: func(e *env, c *client.Client) error {
			e.spend(e.key, 3)
			_, err := c.Task(ctx, "x")
			var apiErr *client.APIError
			if errors.As(err, &apiErr) && apiErr.RetryAfter != time.Minute {
				return fmt.Errorf("RetryAfter = %v, want 1m", apiErr.RetryAfter)
			}
			return err
		},
		status: 429, code: "rate_limit_exceeded", sentinel: imagegen.ErrRateLimited, message: "rate limit exceeded: at most 3 requests per 1m0s per API key",
	}, {
		name:   "internal error",
		opts:   []func(*envOptions){withFailingStore},
		call:   func(e *env, c *client.Client) error { _, err := c.Submit(ctx, fox); return err },
		status: 500, code: "internal_error", message: "internal server error",
	}, {
		name: "unknown path",
		call: func(e *env, c *client.Client) error {
			_, err := e.clientFor(e.base+"/api/v1/nope", e.key).Submit(ctx, fox)
			return err
		},
		status: 404, code: "not_found", message: "no such endpoint: /api/v1/nope/generate",
	}, {
		name: "not the API",
		call: func(e *env, c *client.Client) error {
			_, err := e.clientFor(e.base+"/api/v0", e.key).Submit(ctx, fox)
			return err
		},
		status: 404, code: "", message: "404 page not found", // the plain text of the host's mux
	}, {
		name: "image not found",
		call: func(e *env, c *client.Client) error {
			return c.Download(ctx, e.base+"/api/v1/images/nope?expires=1&sig=x", &bytes.Buffer{})
		},
		status: 404, code: "not_found", sentinel: imagegen.ErrImageNotFound, message: "image not found or link expired",
	}, {
		name: "task already finished",
		call: func(e *env, c *client.Client) error {
			id := submitEach(e.t, c, fox, 1)[0]
			e.runWorkers()
			_, err := c.Cancel(ctx, id)
			return err
		},
		status: 409, code: "task_already_finished", sentinel: imagegen.ErrInvalidTransition, message: "the task has already finished; it was not changed",
	}, {
		name: "idempotency key in use",
		call: func(e *env, c *client.Client) error {
			store := e.stack.Store
			if _, err := store.BeginIdempotent(ctx, "alice", "k", fingerprint(e.t, fox), "", time.Minute, time.Hour); err != nil {
				return err
			}
			_, err := c.SubmitWithKey(ctx, fox, "k")
			return err
		},
		status: 409, code: "idempotency_key_in_use", sentinel: client.ErrIdempotencyKeyInUse,
		message: "a request with this Idempotency-Key is still in progress; retry later",
	}, {
		name: "extension missing",
		call: func(e *env, c *client.Client) error {
			e.setWrap(func(next http.Handler) http.Handler { // a server without the extensions
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/api/v1/credits" {
						r = r.Clone(r.Context())
						r.URL.Path = "/api/v1/nope"
					}
					next.ServeHTTP(w, r)
				})
			})
			_, err := c.Credits(ctx)
			return err
		},
		status: 404, code: "not_found", message: "no such endpoint: /api/v1/nope",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T, e *env) {
				is := is.New(t)
				err := tc.call(e, e.client())
				var apiErr *client.APIError
				is.True(errors.As(err, &apiErr))
				is.Equal(apiErr.StatusCode, tc.status)
				is.Equal(apiErr.Code, tc.code)
				is.Equal(apiErr.Message, tc.message) // the server's own message
				for _, s := range []error{imagegen.ErrUnauthorized, imagegen.ErrInsufficientCredits, imagegen.ErrTaskNotFound,
					imagegen.ErrInvalidParams, imagegen.ErrRateLimited, imagegen.ErrImageNotFound,
					imagegen.ErrInvalidTransition, client.ErrIdempotencyKeyInUse} {
					is.Equal(errors.Is(err, s), s == tc.sentinel) // its sentinel and no other
				}
				is.True(strings.Contains(err.Error(), tc.message))
				is.True(!strings.Contains(err.Error(), e.key))
				is.True(!strings.Contains(fmt.Sprintf("%+v %#v", err, err), e.key))
			}, tc.opts...)
		})
	}
}

// Both ways the server may answer polls: holding them (long polls), or at
// once (a server without the extension, so Wait backs off).
var pollModes = []struct {
	name string
	wrap func(http.Handler) http.Handler
}{
	{"long polls", nil},
	{"short polls", ignorePrefer},
}

// inEachPollMode runs test once for each of pollModes, in a bubble with
// an env whose key may make limit requests a minute.
func inEachPollMode(t *testing.T, limit int, test func(t *testing.T, e *env)) {
	for _, mode := range pollModes {
		t.Run(mode.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T, e *env) {
				e.setWrap(mode.wrap)
				test(t, e)
			}, withLimit(limit))
		})
	}
}

// TestWaitMeets429WithinLimit: another program spends the key's budget, so
// Wait's first poll gets 429; it waits out Retry-After, then polls within
// the RateLimit header's budget until the task ends, never sending more
// than the limit in any rolling minute.
func TestWaitMeets429WithinLimit(t *testing.T) {
	const limit = 3
	inEachPollMode(t, limit, func(t *testing.T, e *env) {
		is := is.New(t)
		c := e.client()
		sub, err := c.Submit(context.Background(), fox)
		is.NoErr(err)
		e.spend(e.key, limit-1)
		start := time.Now()
		e.finishAfter(3 * time.Minute)
		task, err := c.Wait(context.Background(), sub.TaskID)
		is.NoErr(err)
		is.Equal(task.Status, imagegen.StatusSuccess)

		log := e.log()
		limited := only(log, func(a arrival) bool { return a.status == http.StatusTooManyRequests })
		is.Equal(len(limited), 1) // only the poll it could not foresee
		is.Equal(log[1].status, http.StatusTooManyRequests)
		is.Equal(log[2].at.Sub(log[1].at), time.Minute) // Retry-After was honoured
		is.True(maxInWindow(log, time.Minute) <= limit)
		is.True(len(only(log, isGet)) >= 5)                    // it kept polling through several windows
		is.True(time.Since(start) < 3*time.Minute+time.Minute) // and ended soon after the task
	})
}

// TestConcurrentWaitsShareLimit: two goroutines wait for two tasks with
// one Client; together they never exceed the key's limit and never get a
// 429.
func TestConcurrentWaitsShareLimit(t *testing.T) {
	const limit = 3
	inEachPollMode(t, limit, func(t *testing.T, e *env) {
		is := is.New(t)
		c := e.client()
		ids := submitEach(t, c, fox, 2)
		e.finishAfter(4 * time.Minute)
		tasks := make([]*client.Task, len(ids))
		errs := make([]error, len(ids))
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Go(func() { tasks[i], errs[i] = c.Wait(context.Background(), id) })
		}
		wg.Wait()

		for i := range ids {
			is.NoErr(errs[i])
			is.Equal(tasks[i].Status, imagegen.StatusSuccess)
		}
		log := e.log()
		is.Equal(len(only(log, func(a arrival) bool { return a.status == http.StatusTooManyRequests })), 0)
		is.True(maxInWindow(log, time.Minute) <= limit)
		for _, id := range ids { // both kept polling
			is.True(len(only(log, func(a arrival) bool { return strings.HasSuffix(a.path, id) })) >= 3)
		}
	})
}

func TestWaitRetriesServerErrors(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		sl := &sleepLog{}
		c := e.client(client.WithClock(sl))
		_, err := c.Wait(context.Background(), "some-task")
		var apiErr *client.APIError
		is.True(errors.As(err, &apiErr))
		is.Equal(apiErr.Code, "internal_error")
		is.Equal(len(e.log()), 4) // the first poll and 3 retries
		is.Equal(sl.sleeps(), []time.Duration{time.Second, 2 * time.Second, 4 * time.Second})
	}, withFailingStore)
}

func TestWaitStopsOnClientErrors(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		c := e.client()
		_, err := c.Wait(context.Background(), "nope")
		is.True(errors.Is(err, imagegen.ErrTaskNotFound))
		is.Equal(len(e.log()), 1)
		_, err = c.Task(context.Background(), "")
		is.True(errors.Is(err, imagegen.ErrTaskNotFound))
		is.Equal(len(e.log()), 1) // no request for an empty id
	})
}

func TestWaitEndsWithContext(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		c := e.client()
		sub, err := c.Submit(context.Background(), fox)
		is.NoErr(err)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err = c.Wait(ctx, sub.TaskID) // the task never ends
		is.True(errors.Is(err, context.DeadlineExceeded))
		is.Equal(time.Since(start), 2*time.Minute)
		is.Equal(len(only(e.log(), isGet)), 5) // at 0, 25, 50, 75 and 100 s
	})
}

func TestDownloadErrors(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		c := e.client()
		sub, err := c.Submit(context.Background(), fox)
		is.NoErr(err)
		e.runWorkers()
		task, err := c.Task(context.Background(), sub.TaskID)
		is.NoErr(err)
		var buf bytes.Buffer
		err = c.Download(context.Background(), task.Images[0]+"x", &buf) // a tampered signature
		is.True(errors.Is(err, imagegen.ErrImageNotFound))
		is.Equal(buf.Len(), 0)
		err = c.Download(context.Background(), "/api/v1/images/x", &buf)
		is.True(err != nil) // not an absolute URL
		is.Equal(len(e.log()), 3)
	})
}

// Download stops at the client's limit, whether or not the server says
// the size first.
func TestDownloadLimit(t *testing.T) {
	image := strings.Repeat("p", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", "1000")
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte(image))
		w.(http.Flusher).Flush()
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name  string
		limit int64
		query string
		err   error
	}{
		{"within the limit", 1000, "", nil},
		{"within the limit, size unknown", 1000, "?chunked=1", nil},
		{"over the limit by its Content-Length", 999, "", client.ErrTooLarge},
		{"over the limit while reading", 999, "?chunked=1", client.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			c, err := client.New(srv.URL, "key-0123456789abcdef", client.WithMaxDownload(tc.limit))
			is.NoErr(err)
			var buf bytes.Buffer
			err = c.Download(context.Background(), srv.URL+"/api/v1/images/x"+tc.query, &buf)
			if tc.err == nil {
				is.NoErr(err)
				is.Equal(buf.String(), image)
				return
			}
			is.True(errors.Is(err, tc.err))
			is.True(buf.Len() <= int(tc.limit)) // never past the limit
		})
	}
}

func TestKeyNeverShown(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		c := e.client()
		for _, s := range []string{
			fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c),
			fmt.Sprintf("%v %+v", *c, *c),
		} {
			is.True(!strings.Contains(s, e.key))
		}
		is.True(strings.Contains(c.String(), "[REDACTED]"))
		is.True(strings.Contains(c.String(), e.base+"/api/v1"))

		// Errors of every kind: from the API, from New, from the network.
		_, err1 := c.Task(context.Background(), "nope")
		_, err2 := client.New(e.base, e.key+"\n")
		_ = e.srv.Close()
		_, err3 := c.Submit(context.Background(), fox)
		for _, err := range []error{err1, err2, err3} {
			is.True(err != nil)
			is.True(!strings.Contains(fmt.Sprintf("%v %+v", err, err), e.key))
		}
	})
}

func TestNewValidates(t *testing.T) {
	for name, tc := range map[string]struct {
		base, key string
		opts      []client.Option
	}{
		"no scheme":       {base: "img.example.test", key: "k"},
		"ftp":             {base: "ftp://img.example.test", key: "k"},
		"no host":         {base: "http://", key: "k"},
		"credentials":     {base: "https://user:pw@img.example.test", key: "k"},
		"query":           {base: "https://img.example.test/?a=b", key: "k"},
		"no key":          {base: "https://img.example.test"},
		"key with space":  {base: "https://img.example.test", key: "a b"},
		"zero interval":   {base: "https://img.example.test", key: "k", opts: []client.Option{client.WithPollInterval(0, time.Second)}},
		"max below first": {base: "https://img.example.test", key: "k", opts: []client.Option{client.WithPollInterval(time.Second, time.Millisecond)}},
		"negative wait":   {base: "https://img.example.test", key: "k", opts: []client.Option{client.WithLongPoll(-time.Second)}},
		// A negative limit made Download of an image of unknown size
		// write nothing and return nil.
		"negative download limit": {base: "https://img.example.test", key: "k", opts: []client.Option{client.WithMaxDownload(-1)}},
		"zero download limit":     {base: "https://img.example.test", key: "k", opts: []client.Option{client.WithMaxDownload(0)}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := client.New(tc.base, tc.key, tc.opts...)
			is.New(t).True(err != nil)
		})
	}
	for base, want := range map[string]string{
		"http://127.0.0.1:8080":         "http://127.0.0.1:8080/api/v1",
		"http://127.0.0.1:8080/":        "http://127.0.0.1:8080/api/v1",
		"https://app.example.test/img/": "https://app.example.test/img",
	} {
		c, err := client.New(base, "k")
		is.New(t).NoErr(err)
		is.New(t).True(strings.Contains(c.String(), `"`+want+`"`))
	}
}

// A base URL is refused without printing what may be a secret in it: a
// token in its query or fragment, a password in user information that
// does not parse.
func TestNewPrintsNoSecretOfTheBaseURL(t *testing.T) {
	for _, base := range []string{
		"https://img.example.test/?token=hunter2secret",
		"https://img.example.test/#hunter2secret",
		"https://user:hunter2/secret@img.example.test", // a "/" in the password: not a URL
		"ftp://img.example.test/?token=hunter2secret",  // refused for its scheme
		"https:///api/v1?token=hunter2secret",          // refused for its missing host
		"img.example.test/api/v1?token=hunter2secret",  // refused for its missing scheme
		"img.example.test/api/v1#hunter2secret",
		"ftp://hunter2secret@img.example.test/", // a token as the user name
	} {
		_, err := client.New(base, "k")
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("New(%q): %v; want an error without the secret", base, err)
		}
	}
}

// A base URL without a scheme (host:port, as people write addresses) is
// refused with the URL it likely meant.
func TestNewSuggestsAScheme(t *testing.T) {
	is := is.New(t)
	_, err := client.New("127.0.0.1:18570", "k")
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "http://127.0.0.1:18570"))
}

// TestRateLimitWaitIsTold: WithRateLimitWait hears of every wait the
// client makes for the key's limit, first the 429's Retry-After.
func TestRateLimitWaitIsTold(t *testing.T) {
	const limit = 3
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		var mu sync.Mutex
		var waits []time.Duration
		c := e.client(client.WithRateLimitWait(func(d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			waits = append(waits, d)
		}))
		sub, err := c.Submit(context.Background(), fox)
		is.NoErr(err)
		e.spend(e.key, limit-1)
		e.finishAfter(3 * time.Minute)
		_, err = c.Wait(context.Background(), sub.TaskID)
		is.NoErr(err)
		mu.Lock()
		defer mu.Unlock()
		is.True(len(waits) >= 2)        // the 429, then the budget of later windows
		is.Equal(waits[0], time.Minute) // Retry-After
		for _, d := range waits {
			is.True(d > 0 && d <= time.Minute)
		}
	}, withLimit(limit))
}
