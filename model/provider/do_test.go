package provider_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// answer is one scripted answer of a fake server.
type answer struct {
	status int
	header map[string]string
	body   string
	hangup bool // close the connection without answering
}

// script serves answers in order (the last one again when used up) and
// counts calls.
type script struct {
	answers []answer
	calls   atomic.Int32
	auth    atomic.Value
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.calls.Add(1)) - 1
	s.auth.Store(r.Header.Get("Authorization"))
	a := s.answers[min(n, len(s.answers)-1)]
	if a.hangup {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = w.Write([]byte(a.body))
}

func serve(t *testing.T, answers ...answer) (*script, string) {
	s := &script{answers: answers}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func policy(clock imagegen.Clock, retries int) provider.Policy {
	return provider.Policy{Provider: "acme", MaxRetries: retries, Clock: clock, Redact: provider.Redactor(key)}
}

func get(url string) provider.BuildFunc {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+provider.Secret(key).Reveal())
		}
		return req, err
	}
}

func modelError(t *testing.T, err error) *imagegen.ModelError {
	t.Helper()
	var me *imagegen.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *imagegen.ModelError", err, err)
	}
	return me
}

var ok = answer{status: 200, body: `{"ok":true}`}

func TestDoSucceedsFirstTime(t *testing.T) {
	is := is.New(t)
	s, url := serve(t, ok)
	clock := providertest.NewInstantClock()
	resp, err := provider.Do(context.Background(), http.DefaultClient, get(url), policy(clock, 3))
	is.NoErr(err)
	is.Equal(resp.Status, 200)
	is.Equal(string(resp.Body), `{"ok":true}`)
	is.Equal(s.calls.Load(), int32(1))
	is.Equal(len(clock.Waits()), 0)
	is.Equal(s.auth.Load(), "Bearer "+key)
}

func TestDoHonoursRetryHeaders(t *testing.T) {
	clock0 := providertest.NewInstantClock()
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"Retry-After seconds", map[string]string{"Retry-After": "12"}, 12 * time.Second},
		{"retry-after-ms wins", map[string]string{"Retry-After": "12", "Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
		{"Retry-After HTTP date", map[string]string{"Retry-After": clock0.Now().Add(30 * time.Second).Format(http.TimeFormat)}, 30 * time.Second},
		{"Retry-After date in the past", map[string]string{"Retry-After": clock0.Now().Add(-time.Hour).Format(http.TimeFormat)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			s, url := serve(t, answer{status: 429, header: tc.header, body: `{"error":"slow down"}`}, ok)
			clock := providertest.NewInstantClock()
			resp, err := provider.Do(context.Background(), http.DefaultClient, get(url), policy(clock, 3))
			is.NoErr(err)
			is.Equal(resp.Status, 200)
			is.Equal(s.calls.Load(), int32(2))
			if tc.want > 0 {
				is.Equal(clock.Waits(), []time.Duration{tc.want}) // the asked delay, on the injected clock
			} else {
				is.Equal(len(clock.Waits()), 0) // nothing to wait
			}
		})
	}
}

func TestDoRetries5xxWithBackoff(t *testing.T) {
	is := is.New(t)
	s, url := serve(t, answer{status: 503}, answer{status: 500}, answer{status: 502}, ok)
	clock := providertest.NewInstantClock()
	p := policy(clock, 3)
	p.BaseDelay, p.MaxDelay = time.Second, 3*time.Second
	resp, err := provider.Do(context.Background(), http.DefaultClient, get(url), p)
	is.NoErr(err)
	is.Equal(resp.Status, 200)
	is.Equal(s.calls.Load(), int32(4))
	isBackoff(t, clock.Waits(), 3)
}

// isBackoff checks that waits are n backoffs of a policy of BaseDelay 1s
// and MaxDelay 3s: doubled, capped, in the upper half (jittered).
func isBackoff(t *testing.T, waits []time.Duration, n int) {
	t.Helper()
	is := is.New(t)
	is.Equal(len(waits), n)
	for i, w := range waits {
		d := min(time.Second<<i, 3*time.Second)
		is.True(w >= d/2 && w <= d)
	}
}

func TestDoRetriesTransportErrors(t *testing.T) {
	is := is.New(t)
	s, url := serve(t, answer{hangup: true}, ok)
	resp, err := provider.Do(context.Background(), http.DefaultClient, get(url), policy(providertest.NewInstantClock(), 3))
	is.NoErr(err)
	is.Equal(resp.Status, 200)
	is.Equal(s.calls.Load(), int32(2))
}

func TestDoAttemptsAreBounded(t *testing.T) {
	is := is.New(t)
	s, url := serve(t, answer{status: 503, body: "overloaded"})
	clock := providertest.NewInstantClock()
	_, err := provider.Do(context.Background(), http.DefaultClient, get(url), policy(clock, 2))
	me := modelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgUnavailable)
	is.True(strings.Contains(me.Err.Error(), "HTTP 503"))
	is.Equal(s.calls.Load(), int32(3)) // 1 + 2 retries
	is.Equal(len(clock.Waits()), 2)
}

func TestDoDoesNotRetryWhatIsNotRetryable(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 422} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			is := is.New(t)
			s, url := serve(t, answer{status: status, body: "no"})
			_, err := provider.Do(context.Background(), http.DefaultClient, get(url), policy(providertest.NewInstantClock(), 3))
			me := modelError(t, err)
			is.True(!me.Retryable)
			is.Equal(s.calls.Load(), int32(1))
		})
	}
}

func TestDoNeverWaitsPastTheDeadline(t *testing.T) {
	is := is.New(t)
	s, url := serve(t, answer{status: 429, header: map[string]string{"Retry-After": "60"}})
	clock := providertest.NewInstantClock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := provider.Do(ctx, http.DefaultClient, get(url), policy(clock, 3))
	is.True(time.Since(start) < 4*time.Second) // returned at once
	me := modelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgBusy)
	is.True(errors.Is(err, provider.ErrPastDeadline))
	is.Equal(s.calls.Load(), int32(1))
	is.Equal(len(clock.Waits()), 0)
	is.Equal(me.RetryAfter, 60*time.Second) // the service pauses the model this long for every worker
}

// Only a 429 asks the service to pause the model: a 503's Retry-After
// is this call's business.
func TestDoPausesOnlyOnTooManyRequests(t *testing.T) {
	is := is.New(t)
	_, url := serve(t, answer{status: 503, header: map[string]string{"Retry-After": "60"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := provider.Do(ctx, http.DefaultClient, get(url), policy(providertest.NewInstantClock(), 3))
	is.Equal(modelError(t, err).RetryAfter, time.Duration(0))
}

// A 429 whose wait is in its body (Gemini's RetryInfo), not in a
// Retry-After header, pauses the model all the same.
func TestDoPausesOnADelayInTheBody(t *testing.T) {
	is := is.New(t)
	_, url := serve(t, answer{status: 429, body: `{"retryDelay":"38s"}`})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p := policy(providertest.NewInstantClock(), 3)
	p.RetryDelay = func(f provider.Failure) (time.Duration, bool) {
		return 38 * time.Second, strings.Contains(string(f.Body), `"38s"`)
	}
	_, err := provider.Do(ctx, http.DefaultClient, get(url), p)
	me := modelError(t, err)
	is.True(errors.Is(err, provider.ErrPastDeadline))
	is.Equal(me.RetryAfter, 38*time.Second)
}

func TestDoGivesUpOnTooLongRetryAfter(t *testing.T) {
	is := is.New(t)
	s, url := serve(t, answer{status: 503, header: map[string]string{"Retry-After": "3600"}})
	clock := providertest.NewInstantClock()
	_, err := provider.Do(context.Background(), http.DefaultClient, get(url), policy(clock, 3))
	me := modelError(t, err)
	is.True(me.Retryable)
	is.Equal(s.calls.Load(), int32(1))
	is.Equal(len(clock.Waits()), 0)
}

func TestDoUsesTheAdaptersDelayParser(t *testing.T) {
	is := is.New(t)
	_, url := serve(t, answer{status: 429, body: `{"retryDelay":"7s"}`}, ok)
	clock := providertest.NewInstantClock()
	p := policy(clock, 3)
	p.RetryDelay = func(f provider.Failure) (time.Duration, bool) {
		is.Equal(f.Status, 429)
		return 7 * time.Second, strings.Contains(string(f.Body), `"7s"`)
	}
	_, err := provider.Do(context.Background(), http.DefaultClient, get(url), p)
	is.NoErr(err)
	is.Equal(clock.Waits(), []time.Duration{7 * time.Second})
}

func TestDoLetsTheClassifierDecide(t *testing.T) {
	is := is.New(t)
	s, url := serve(t, answer{status: 429, body: `insufficient_quota`})
	p := policy(providertest.NewInstantClock(), 3)
	p.Classify = func(f provider.Failure) *imagegen.ModelError {
		return provider.NewError("acme", f.Status, string(f.Body), provider.Retry(!strings.Contains(string(f.Body), "insufficient_quota")))
	}
	_, err := provider.Do(context.Background(), http.DefaultClient, get(url), p)
	is.True(!modelError(t, err).Retryable)
	is.Equal(s.calls.Load(), int32(1))
}

func TestDoTimesOut(t *testing.T) {
	is := is.New(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // hang until the client gives up (bounded by the test)
		case <-r.Context().Done():
		case <-release:
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := provider.Do(ctx, http.DefaultClient, get(srv.URL), policy(providertest.NewInstantClock(), 3))
	is.True(time.Since(start) < 5*time.Second)
	me := modelError(t, err)
	is.True(me.Retryable)
	is.Equal(me.Message, provider.MsgTimeout)
	is.True(errors.Is(err, context.DeadlineExceeded))
}

func TestDoRedactsTheKey(t *testing.T) {
	is := is.New(t)
	_, url := serve(t, answer{status: 401, body: `{"error":"Incorrect API key provided: ` + key + `"}`})
	_, err := provider.Do(context.Background(), http.DefaultClient, get(url), policy(providertest.NewInstantClock(), 3))
	me := modelError(t, err)
	is.Equal(me.Message, provider.MsgMisconfigured)
	is.True(!strings.Contains(err.Error(), key))
	is.True(strings.Contains(err.Error(), "[redacted]"))
	is.True(strings.Contains(err.Error(), "HTTP 401"))
}

func TestDoBoundsTheBody(t *testing.T) {
	is := is.New(t)
	_, url := serve(t, answer{status: 200, body: strings.Repeat("x", 100)})
	p := policy(providertest.NewInstantClock(), 3)
	p.MaxBodyBytes = 10
	_, err := provider.Do(context.Background(), http.DefaultClient, get(url), p)
	me := modelError(t, err)
	is.True(!me.Retryable)
	is.Equal(me.Message, provider.MsgBadAnswer)
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{map[string]string{}, 0, false},
		{map[string]string{"Retry-After": "0"}, 0, true},
		{map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{map[string]string{"Retry-After": "-3"}, 0, false},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{map[string]string{"retry-after-ms": "250"}, 250 * time.Millisecond, true},
		{map[string]string{"retry-after-ms": "x", "Retry-After": "2"}, 2 * time.Second, true},
	} {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		got, ok := provider.RetryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RetryAfter(%v) = %v, %v; want %v, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}

func TestWait(t *testing.T) {
	is := is.New(t)
	clock := providertest.NewInstantClock()
	is.NoErr(provider.Wait(context.Background(), clock, time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	is.True(errors.Is(provider.Wait(ctx, clock, time.Hour), provider.ErrPastDeadline))
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	is.True(errors.Is(provider.Wait(cancelled, clock, time.Second), context.Canceled))
	is.Equal(clock.Waits(), []time.Duration{time.Second})
}

// waitingClock never fires; it tells when someone waits on it.
type waitingClock struct{ waiting chan time.Duration }

func (c waitingClock) Now() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
func (c waitingClock) After(d time.Duration) <-chan time.Time {
	c.waiting <- d
	return nil
}

func TestDoStopsWaitingWhenTheContextEnds(t *testing.T) {
	is := is.New(t)
	s, url := serve(t, answer{status: 503, header: map[string]string{"Retry-After": "30"}})
	clock := waitingClock{waiting: make(chan time.Duration, 1)}
	cctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-clock.waiting // Do is waiting to retry
		cancel()
	}()
	_, err := provider.Do(cctx, http.DefaultClient, get(url), policy(clock, 3))
	me := modelError(t, err)
	is.True(me.Retryable)
	is.True(errors.Is(err, context.Canceled))
	is.Equal(s.calls.Load(), int32(1))
}

func TestDefaultHTTPClientDoesNotFollowRedirects(t *testing.T) {
	is := is.New(t)
	var leaked atomic.Value
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("X-Api-Key"))
	}))
	defer elsewhere.Close()
	_, url := serve(t, answer{status: http.StatusFound, header: map[string]string{"Location": elsewhere.URL}})
	build := provider.Get(url, http.Header{"X-Api-Key": {key}})
	_, err := provider.Do(context.Background(), provider.DefaultHTTPClient(), build, policy(providertest.NewInstantClock(), 0))
	me := modelError(t, err)
	is.True(!me.Retryable)
	is.True(strings.Contains(me.Err.Error(), "HTTP 302"))
	is.Equal(leaked.Load(), nil) // the key never went elsewhere
}

func TestGetAndPostBuildFreshRequests(t *testing.T) {
	is := is.New(t)
	h := http.Header{"Authorization": {"Bearer x"}}
	for _, build := range []provider.BuildFunc{provider.Get("http://127.0.0.1:1/p", h), provider.Post("http://127.0.0.1:1/p", "text/plain", []byte("hi"), h)} {
		r1, err := build(context.Background())
		is.NoErr(err)
		r2, err := build(context.Background())
		is.NoErr(err)
		r1.Header.Set("Authorization", "changed")
		is.Equal(r2.Header.Get("Authorization"), "Bearer x") // headers are copied
		is.Equal(h.Get("Authorization"), "Bearer x")
		is.Equal(r2.Header.Get("Accept"), "application/json")
	}
	_, err := provider.PostJSON("http://127.0.0.1:1/p", func() {}, nil)
	is.True(err != nil) // cannot encode
}

// The Classify and RetryDelay of an adapter's Defaults are the ones its
// client's Do uses.
func TestClientDoUsesTheAdaptersHooks(t *testing.T) {
	is := is.New(t)
	s, url := serve(t, answer{status: 503, body: "busy"}, answer{status: 418, body: "teapot"})
	clock := providertest.NewInstantClock()
	cfg := provider.Config{APIKey: key, Clock: clock}
	c, err := provider.NewClient(&cfg, provider.Defaults{
		Provider: "acme", BaseURL: url,
		Classify: func(f provider.Failure) *imagegen.ModelError {
			return &imagegen.ModelError{Provider: "acme", Message: "acme says " + string(f.Body), Retryable: f.Status == 503}
		},
		RetryDelay: func(provider.Failure) (time.Duration, bool) { return 7 * time.Second, true },
	})
	is.NoErr(err)
	_, err = c.Do(context.Background(), get(c.URL("/x")))
	is.Equal(modelError(t, err).Message, "acme says teapot")  // Classify made the error
	is.Equal(clock.Waits(), []time.Duration{7 * time.Second}) // RetryDelay timed the retry
	is.Equal(s.calls.Load(), int32(2))
}
