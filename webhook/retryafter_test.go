package webhook_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/webhook"
)

// answer is one scripted answer of a scriptedReceiver.
type answer struct {
	status     int
	retryAfter string // the Retry-After header, if not empty
}

// scriptedReceiver answers with its scripted answers in turn, then 200,
// and counts the calls.
type scriptedReceiver struct {
	mu      sync.Mutex
	answers []answer
	calls   int
}

func (s *scriptedReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	a := answer{status: http.StatusOK}
	if len(s.answers) > 0 {
		a, s.answers = s.answers[0], s.answers[1:]
	}
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.WriteHeader(a.status)
}

func (s *scriptedReceiver) script(answers ...answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = answers
}

func (s *scriptedReceiver) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// outcomes records the observer's delivery outcomes.
type outcomes struct {
	imagegen.NopObserver
	mu  sync.Mutex
	got []string
}

func (o *outcomes) WebhookDelivery(outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, outcome)
}

func (o *outcomes) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got...)
}

// hookRig is a fixture's service, store and clock with a scripted
// receiver (whose URL carries secret-looking parts) and a dispatcher
// (MaxAttempts 3, default Backoff 5s and MaxBackoff 10m) that records
// its outcomes and logs.
type hookRig struct {
	f      *fixture
	recv   *scriptedReceiver
	url    string
	disp   *webhook.Dispatcher
	seen   *outcomes
	logs   *bytes.Buffer // written under the handler's lock; read after RunOnce
	taskID string
}

const urlSecret = "s3cr3t-path"

func newHookRig(t *testing.T) *hookRig {
	return newHookRigWith(t, func(p webhook.Poster) webhook.Poster { return p })
}

// newHookRigWith is newHookRig with the dispatcher's Poster wrapped by
// wrap.
func newHookRigWith(t *testing.T, wrap func(webhook.Poster) webhook.Poster) *hookRig {
	is := is.New(t)
	r := &hookRig{f: newFixture(t, true), recv: &scriptedReceiver{}, seen: &outcomes{}, logs: &bytes.Buffer{}}
	srv := httptest.NewServer(r.recv)
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/hooks/" + urlSecret + "?token=" + urlSecret
	poster, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.NoErr(err)
	r.disp, err = webhook.NewDispatcher(webhook.Config{
		Service: r.f.svc, Store: r.f.store, Poster: wrap(poster), Clock: r.f.clock, MaxAttempts: 3,
		Render: renderStatus, Observer: r.seen,
		Logger: slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	is.NoErr(err)
	r.taskID = finishTask(t, r.f.svc, "u", r.url)
	return r
}

// after advances the clock by d and runs the dispatcher once, returning
// how many deliveries it claimed.
func (r *hookRig) after(t *testing.T, d time.Duration) int {
	t.Helper()
	r.f.clock.Advance(d)
	n, err := r.disp.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRetryAfterOn429And503IsHonoured: the next attempt waits what the
// receiver asks for, in seconds or as a date, at most MaxBackoff (10m).
// On main every one came again after the 5s backoff.
func TestRetryAfterOn429And503IsHonoured(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter func(now time.Time) string
		wait       time.Duration
	}{
		{"503 in seconds", http.StatusServiceUnavailable, func(time.Time) string { return "120" }, 2 * time.Minute},
		{"429 in seconds", http.StatusTooManyRequests, func(time.Time) string { return "90" }, 90 * time.Second},
		{"429 as a date", http.StatusTooManyRequests, func(now time.Time) string {
			return now.Add(5 * time.Minute).Format(http.TimeFormat)
		}, 5 * time.Minute},
		{"503 capped at MaxBackoff", http.StatusServiceUnavailable, func(time.Time) string { return "86400" }, 10 * time.Minute},
		{"429 as a date capped at MaxBackoff", http.StatusTooManyRequests, func(now time.Time) string {
			return now.Add(48 * time.Hour).Format(http.TimeFormat)
		}, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			r := newHookRig(t)
			r.recv.script(answer{tc.status, tc.retryAfter(r.f.clock.Now())})
			is.Equal(r.after(t, 0), 1)                     // answered tc.status
			is.Equal(r.after(t, 5*time.Second), 0)         // not after the backoff
			is.Equal(r.after(t, tc.wait-6*time.Second), 0) // nor a second early
			is.Equal(r.after(t, time.Second), 1)           // but when it asked (or the cap)
			is.Equal(r.recv.count(), 2)
			is.Equal(r.seen.list(), []string{"retry", "delivered"})
		})
	}
}

// TestRetryAfterFallsBackToTheBackoff: a malformed, negative, past or
// too short Retry-After, none, or one on another status leaves the
// backoff (5s), and 4xx/5xx other than 410 are retried as before; a good
// Retry-After on the next answer is honoured (which fails on main).
func TestRetryAfterFallsBackToTheBackoff(t *testing.T) {
	for _, first := range []answer{
		{http.StatusServiceUnavailable, "soon"},
		{http.StatusServiceUnavailable, "-30"},
		{http.StatusTooManyRequests, "Tue, 99 Foo 2026 00:00:00 GMT"},
		{http.StatusTooManyRequests, "Thu, 01 Jan 2026 00:00:00 GMT"}, // past
		{http.StatusTooManyRequests, "1"},                             // shorter than the backoff
		{http.StatusTooManyRequests, ""},
		{http.StatusServiceUnavailable, ""},
		{http.StatusInternalServerError, "120"},
		{http.StatusBadGateway, "120"},
		{http.StatusNotFound, "120"},
		{http.StatusBadRequest, ""},
		{http.StatusRequestTimeout, "120"},
	} {
		t.Run(http.StatusText(first.status)+" "+first.retryAfter, func(t *testing.T) {
			is := is.New(t)
			r := newHookRig(t)
			r.recv.script(first, answer{http.StatusServiceUnavailable, "120"})
			is.Equal(r.after(t, 0), 1)
			is.Equal(r.after(t, 4*time.Second), 0)
			is.Equal(r.after(t, time.Second), 1)     // the backoff: 5s
			is.Equal(r.after(t, 119*time.Second), 0) // the good Retry-After: 120s, not the 10s backoff
			is.Equal(r.after(t, time.Second), 1)
			is.Equal(r.recv.count(), 3)
			is.Equal(r.seen.list(), []string{"retry", "retry", "delivered"})
		})
	}
}

// TestRetryAfterStillCountsTheAttempt: a receiver that always asks for
// later is given up after MaxAttempts (3) like any other failure.
func TestRetryAfterStillCountsTheAttempt(t *testing.T) {
	is := is.New(t)
	r := newHookRig(t)
	later := answer{http.StatusTooManyRequests, "60"}
	r.recv.script(later, later, later, later)
	is.Equal(r.after(t, 0), 1)
	is.Equal(r.after(t, 59*time.Second), 0) // on main, due after 5s
	is.Equal(r.after(t, time.Second), 1)
	is.Equal(r.after(t, time.Minute), 1)
	is.Equal(r.after(t, time.Hour), 0) // given up
	is.Equal(r.recv.count(), 3)
	is.Equal(r.seen.list(), []string{"retry", "retry", "given_up"})
}

// TestGoneIsGivenUpAtOnce: 410 Gone ends the delivery after one attempt,
// counted as given up and logged at warn with the task id, never the
// URL's parts nor the signing secret. On main it was retried.
func TestGoneIsGivenUpAtOnce(t *testing.T) {
	is := is.New(t)
	r := newHookRig(t)
	r.recv.script(answer{http.StatusGone, "120"})
	is.Equal(r.after(t, 0), 1)
	is.Equal(r.after(t, 5*time.Second), 0)
	is.Equal(r.after(t, time.Hour), 0)
	is.Equal(r.recv.count(), 1)
	is.Equal(r.seen.list(), []string{"given_up"})

	var warn string
	for line := range strings.Lines(r.logs.String()) {
		if strings.Contains(line, `"level":"WARN"`) {
			warn = line
		}
	}
	is.True(strings.Contains(warn, `"task_id":"`+r.taskID+`"`)) // warned, with the task id
	is.True(strings.Contains(warn, "410"))
	secret, err := r.f.svc.WebhookSecret(ctx, "u")
	is.NoErr(err)
	for _, leak := range []string{urlSecret, "token=", secret, strings.TrimPrefix(secret, "whsec_")} {
		is.True(!strings.Contains(r.logs.String(), leak)) // no URL part, no secret, in any log line
	}
}

// plainPoster hides its Poster's PostAnswer.
type plainPoster struct{ webhook.Poster }

// TestAPlainPosterSeesNoRetryAfter: through a Poster that is not an
// AnswerPoster the backoff is kept, and a 410 is still given up at once
// (which fails on main).
func TestAPlainPosterSeesNoRetryAfter(t *testing.T) {
	is := is.New(t)
	r := newHookRigWith(t, func(p webhook.Poster) webhook.Poster { return plainPoster{p} })
	r.recv.script(answer{http.StatusServiceUnavailable, "120"}, answer{http.StatusGone, ""})
	is.Equal(r.after(t, 0), 1)
	is.Equal(r.after(t, 5*time.Second), 1) // the backoff, Retry-After unseen
	is.Equal(r.after(t, time.Hour), 0)     // gone
	is.Equal(r.recv.count(), 2)
	is.Equal(r.seen.list(), []string{"retry", "given_up"})
}

// cancellingPoster cancels the run once its receiver has answered, as a
// shutdown that comes while the answer is on its way back.
type cancellingPoster struct {
	webhook.AnswerPoster
	cancel func()
}

func (p cancellingPoster) PostAnswer(ctx context.Context, url string, header http.Header, body []byte) (int, http.Header, error) {
	defer p.cancel()
	return p.AnswerPoster.PostAnswer(ctx, url, header, body)
}

// TestAnAnswerIsKeptWhenTheRunEnds: a receiver's answer that arrives as
// the run ends is what decides, not the shutdown: a 410 gives the
// delivery up, a 429's Retry-After is honoured and the attempt counted.
// On main both were given back due at once, no attempt counted, so the
// next run sent them again at once.
func TestAnAnswerIsKeptWhenTheRunEnds(t *testing.T) {
	for _, c := range []struct {
		answer answer
		seen   []string
		dueIn  time.Duration // when it comes again; 0 for never
	}{
		{answer{http.StatusGone, ""}, []string{"given_up"}, 0},
		{answer{http.StatusTooManyRequests, "60"}, []string{"retry"}, time.Minute},
	} {
		t.Run(strconv.Itoa(c.answer.status), func(t *testing.T) {
			is := is.New(t)
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			r := newHookRigWith(t, func(p webhook.Poster) webhook.Poster {
				return cancellingPoster{p.(webhook.AnswerPoster), cancel}
			})
			r.recv.script(c.answer)
			n, err := r.disp.RunOnce(runCtx)
			is.NoErr(err)
			is.Equal(n, 1)
			is.True(runCtx.Err() != nil) // the run ended with the answer
			is.Equal(r.seen.list(), c.seen)
			is.Equal(r.after(t, 0), 0) // not given back due at once
			if c.dueIn > 0 {
				is.Equal(r.after(t, c.dueIn-time.Second), 0)
				is.Equal(r.after(t, time.Second), 1)
			} else {
				is.Equal(r.after(t, time.Hour), 0)
			}
		})
	}
}
