package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/ratelimit"
	redislimit "github.com/imagegen/imagegen/ratelimit/redis"
	"github.com/imagegen/imagegen/wire"
)

// TestValidKeyServedDuringBadKeyFlood: 100 bad keys from one address do
// not lock out a valid key used from the same address (many users behind
// one NAT or proxy); only the bad keys are refused once over budget.
func TestValidKeyServedDuringBadKeyFlood(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	var unauthorized, limited int
	for i := 0; i < 100; i++ {
		bad := e.do("GET", "/api/v1/tasks/x", imagegen.NewAPIKey(), "")
		switch bad.Code {
		case http.StatusUnauthorized:
			unauthorized++
		case http.StatusTooManyRequests:
			limited++
			wantError(t, bad, http.StatusTooManyRequests, wire.APIRateLimitExceeded)
			is.True(bad.Header().Get("Retry-After") != "")
		default:
			t.Fatalf("bad key #%d: status %d", i, bad.Code)
		}
		good := e.do("GET", "/api/v1/tasks/x", e.key, "")
		wantError(t, good, http.StatusNotFound, wire.APITaskNotFound) // served, not 429
	}
	is.Equal(unauthorized, 10) // the budget: 10 failures a minute per address
	is.Equal(limited, 90)
}

// TestAuthFailuresPerIPv6Prefix: an IPv6 client's failures count for its
// whole /64, so rotating addresses inside it buys nothing.
func TestAuthFailuresPerIPv6Prefix(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	codes := map[int]int{}
	for i := range 20 {
		codes[badKeyFrom(e.h, "[2001:db8:1:2::"+string(rune('a'+i%6))+"]:443")]++
	}
	is.Equal(codes[http.StatusUnauthorized], 10)
	is.Equal(codes[http.StatusTooManyRequests], 10)
}

// handlerWith is another API handler on e's service, configured by cfg
// (Clock, Logger and a Limiter of its own are filled in).
func (e *env) handlerWith(cfg httpapi.Config) http.Handler {
	_, mux := e.stack.Handler(cfg)
	return mux
}

// badKeyFrom sends a bad key to h from peer with extra headers and
// returns the status.
func badKeyFrom(h http.Handler, peer string, hdr ...string) int {
	r := httptest.NewRequest("GET", "/api/v1/tasks/x", nil)
	r.Header.Set("Authorization", "Bearer "+imagegen.NewAPIKey())
	r.RemoteAddr = peer
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// oneClient checks that three bad keys sent to h from peer, the i-th with
// the headers hdr(i), count against one client's budget of 2 failures:
// 401, 401, then 429.
func oneClient(t *testing.T, h http.Handler, peer string, hdr func(i int) []string) {
	t.Helper()
	for i, want := range []int{http.StatusUnauthorized, http.StatusUnauthorized, http.StatusTooManyRequests} {
		is.New(t).Equal(badKeyFrom(h, peer, hdr(i)...), want)
	}
}

func TestAuthFailuresBehindTrustedProxy(t *testing.T) {
	e := newEnv(t)
	failures, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: 2, Window: time.Minute, Clock: e.clock})
	is.New(t).NoErr(err)
	h := e.handlerWith(httpapi.Config{
		AuthFailures:   failures,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
	})
	const proxy = "10.1.2.3:5555"
	t.Run("each forwarded client counts alone", func(t *testing.T) {
		for _, client := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
			oneClient(t, h, proxy, func(int) []string { return []string{"X-Forwarded-For", client} })
		}
	})
	t.Run("a spoofed leftmost hop is ignored", func(t *testing.T) {
		// The client 198.51.100.7 writes its own X-Forwarded-For; the
		// proxy appends the real address. Rotating the fake buys nothing.
		fakes := []string{"1.1.1.1", "2.2.2.2", "3.3.3.3"}
		oneClient(t, h, proxy, func(i int) []string { return []string{"X-Forwarded-For", fakes[i] + ", 198.51.100.7"} })
	})
	t.Run("a client's own Forwarded header is not read beside X-Forwarded-For", func(t *testing.T) {
		// The proxy appends the real address to X-Forwarded-For and
		// passes the client's Forwarded header through untouched.
		oneClient(t, h, proxy, func(i int) []string {
			return []string{"Forwarded", "for=203.0.113." + strconv.Itoa(i+1), "X-Forwarded-For", "198.51.100.99"}
		})
	})
	t.Run("Forwarded header, through two trusted proxies", func(t *testing.T) {
		is := is.New(t)
		h := e.handlerWith(httpapi.Config{
			AuthFailures:    failures,
			TrustedProxies:  []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
			ForwardedHeader: "Forwarded",
		})
		// X-Forwarded-For is not read when the proxies write Forwarded.
		oneClient(t, h, proxy, func(i int) []string {
			return []string{"Forwarded", "for=198.51.100.50", "X-Forwarded-For", "203.0.113." + strconv.Itoa(77+i)}
		})
		fwd := `for="[2001:db8:aa:bb::1]:4711";proto=https, for=10.9.9.9`
		is.Equal(badKeyFrom(h, proxy, "Forwarded", fwd), http.StatusUnauthorized)
		// Another address of the same /64 is the same client.
		fwd = `for="[2001:db8:aa:bb::2]"`
		is.Equal(badKeyFrom(h, proxy, "Forwarded", fwd), http.StatusUnauthorized)
		is.Equal(badKeyFrom(h, proxy, "Forwarded", fwd), http.StatusTooManyRequests)
	})
	t.Run("an untrusted peer's headers are not read", func(t *testing.T) {
		oneClient(t, h, "192.0.2.200:1", func(i int) []string { return []string{"X-Forwarded-For", "203.0.113." + strconv.Itoa(i+1)} })
	})
}

// TestAuthFailuresSharedOnRedis: two API processes on one Redis share
// each address's failure budget, so N processes do not give N× the
// guesses.
func TestAuthFailuresSharedOnRedis(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	mr := miniredis.RunT(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	var handlers []http.Handler
	for range 2 {
		failures, err := redislimit.New(rdb, redislimit.Config{Limit: 10, Window: time.Minute, Prefix: "test-authfail:"})
		is.NoErr(err)
		handlers = append(handlers, e.handlerWith(httpapi.Config{AuthFailures: failures}))
	}
	codes := map[int]int{}
	for i := range 20 {
		codes[badKeyFrom(handlers[i%2], "192.0.2.50:1000")]++
	}
	is.Equal(codes[http.StatusUnauthorized], 10) // one budget across both
	is.Equal(codes[http.StatusTooManyRequests], 10)
}
