package console_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/console"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/imagegen/imagegen/store/memory"
)

// A console without the API counts failed sign-ins per client address
// as the API does: an IPv6 client's whole /64 is one client (rotating
// addresses inside it buys no more guesses), and an IPv4 address is the
// same client whether the listener shows it plain or IPv4-mapped.
func TestFailedSignInsWithoutAPIGroupAddresses(t *testing.T) {
	ctx := context.Background()
	store := testenv.Memory(t, memory.Config{})
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		addrs []string // one failed sign-in from each, all one client
	}{
		{"IPv6 /64", []string{"[2001:db8:1:2::a]:443", "[2001:db8:1:2::b]:443", "[2001:db8:1:2:ffff::1]:80"}},
		{"IPv4 mapped", []string{"192.0.2.7:443", "[::ffff:192.0.2.7]:443", "[::ffff:192.0.2.7]:80"}},
		{"zone", []string{"[fe80::1%eth0]:443", "[fe80::1%eth1]:443", "[fe80::2]:443"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fails, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: len(tc.addrs) - 1, Window: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			con, err := console.New(ctx, console.Config{
				Service: svc, Store: store, ImageURLs: func(*imagegen.Task) []string { return nil },
				KeySignIn: true, AuthFailures: fails, Logger: slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}
			page := httptest.NewRecorder()
			con.ServeHTTP(page, httptest.NewRequest("GET", "/signin", nil))
			m := csrfField.FindStringSubmatch(page.Body.String())
			if m == nil {
				t.Fatalf("no csrf field on the sign-in page (status %d)", page.Code)
			}
			for i, addr := range tc.addrs {
				form := url.Values{"key": {"wrong-key-0123456789"}, "csrf": {m[1]}}
				r := httptest.NewRequest("POST", "/signin", strings.NewReader(form.Encode()))
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for _, ck := range page.Result().Cookies() {
					r.AddCookie(ck)
				}
				r.RemoteAddr = addr
				w := httptest.NewRecorder()
				con.ServeHTTP(w, r)
				want := http.StatusUnauthorized
				if i == len(tc.addrs)-1 {
					want = http.StatusTooManyRequests // the budget is spent: one client
				}
				if w.Code != want {
					t.Fatalf("failed sign-in %d from %s: status %d, want %d", i+1, addr, w.Code, want)
				}
			}
		})
	}
}
