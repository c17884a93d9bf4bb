package fetch_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/fetch"
)

// rebinding is a Resolver that answers a public address the first time
// and a loopback address every time after: the DNS rebinding attack
// against a guard that checks one answer and connects by name.
type rebinding struct{ calls atomic.Int64 }

func (r *rebinding) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	if r.calls.Add(1) == 1 {
		return []net.IPAddr{{IP: net.ParseIP("93.184.216.34")}}, nil
	}
	return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}}, nil
}

// A name whose DNS answer changes between the check and the connection
// cannot reach the second address: the guard resolves once for each
// connection and dials the address it checked, and the connection after
// the answer changed is refused.
func TestDNSRebindingCannotReachTheSecondAnswer(t *testing.T) {
	is := is.New(t)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close") // each fetch dials again
		_, _ = w.Write(pngOf(1, 1))
	})
	dns, d := &rebinding{}, dialTo(s)
	f, err := fetch.New(fetch.Config{Resolver: dns, Dial: d.Dial})
	is.NoErr(err)
	_, _, err = f.Fetch(t.Context(), "http://rebind.example/a.png")
	is.NoErr(err)
	is.Equal(dns.calls.Load(), int64(1)) // one lookup for the connection, none at dial time
	_, _, err = f.Fetch(t.Context(), "http://rebind.example/a.png")
	is.True(errors.Is(err, fetch.ErrBlockedAddress))
	is.Equal(d.Asked(), []string{"93.184.216.34:80"}) // 127.0.0.1 never dialled
	is.Equal(s.hits.Load(), int64(1))
}

// A redirect to a private or loopback address in any spelling (an IP
// literal in decimal, hex, octal, short, IPv4-mapped or NAT64 form, the
// metadata address, localhost) is refused before it is looked up or
// dialled.
func TestRedirectToAPrivateAddressInAnySpelling(t *testing.T) {
	targets := []string{
		"http://127.0.0.1/a.png",
		"http://2130706433/a.png",
		"http://0x7f000001/a.png",
		"http://0177.0.0.1/a.png",
		"http://127.1/a.png",
		"http://[::1]/a.png",
		"http://[::ffff:127.0.0.1]/a.png",
		"http://[64:ff9b::a9fe:a9fe]/latest/meta-data",
		"http://169.254.169.254/latest/meta-data",
		"http://0xa9fea9fe/latest/meta-data",
		"http://0.0.0.0/a.png",
		"http://[::]/a.png",
		"http://10.0.0.1/a.png",
		"http://localhost/a.png",
		"http://a.localhost./a.png",
		"http://１２７.０.０.１/a.png",
	}
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			is := is.New(t)
			s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/start" {
					http.Redirect(w, r, target, http.StatusFound)
					return
				}
				_, _ = w.Write(pngOf(1, 1))
			})
			names, d := resolver(t, map[string][]string{"images.example": {"93.184.216.34"}}), dialTo(s)
			f, err := fetch.New(fetch.Config{Resolver: names, Dial: d.Dial})
			is.NoErr(err)
			_, _, err = f.Fetch(t.Context(), "http://images.example/start")
			is.True(errors.Is(err, fetch.ErrBlockedAddress))
			is.Equal(d.Asked(), []string{"93.184.216.34:80"}) // only the first hop
			is.Equal(names.calls.Load(), int64(1))            // the target was not looked up
			is.Equal(s.hits.Load(), int64(1))                 // only /start was served
		})
	}
}

// A webhook delivery (Post) to a name that resolves to a private
// address, or to a private IP literal, is refused at connect; so is an
// answer that mixes public and private addresses.
func TestPostRefusesPrivateAddresses(t *testing.T) {
	is := is.New(t)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	d := dialTo(s)
	f, err := fetch.New(fetch.Config{
		Resolver: resolver(t, map[string][]string{
			"hooks.example": {"93.184.216.34"}, "metadata.example": {"169.254.169.254"}, "mixed.example": {"93.184.216.34", "fd00::1"},
		}),
		Dial: d.Dial,
	})
	is.NoErr(err)
	status, err := f.Post(t.Context(), "https://hooks.example/h", nil, []byte("{}"))
	is.True(err != nil) // the test site speaks plain HTTP: the TLS handshake fails, but the address was allowed
	is.True(!errors.Is(err, fetch.ErrBlockedAddress))
	is.Equal(status, 0)
	for _, raw := range []string{"http://metadata.example/h", "http://mixed.example/h", "http://[::ffff:a9fe:a9fe]/h", "http://0xa9fea9fe/h"} {
		_, err := f.Post(t.Context(), raw, nil, []byte("{}"))
		is.True(errors.Is(err, fetch.ErrBlockedAddress))
	}
	is.Equal(d.Asked(), []string{"93.184.216.34:443"})
	is.Equal(s.hits.Load(), int64(0))
}

// A host that answers with endless headers is cut off at the transport's
// header limit, not read to the end.
func TestOversizedHeadersAreRefused(t *testing.T) {
	is := is.New(t)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		for i := range 200 {
			w.Header().Set("X-Pad-"+strings.Repeat("a", i%10)+string(rune('a'+i%26))+string(rune('a'+i/26)), strings.Repeat("x", 1000))
		}
		_, _ = w.Write(pngOf(1, 1))
	})
	d := dialTo(s)
	f, err := fetch.New(fetch.Config{Resolver: resolver(t, map[string][]string{"images.example": {"93.184.216.34"}}), Dial: d.Dial})
	is.NoErr(err)
	_, _, err = f.Fetch(t.Context(), "http://images.example/a.png")
	is.Equal(err.Error(), "could not be downloaded: connection failed") // safe to show
	is.True(strings.Contains(errors.Unwrap(err).Error(), "headers exceeded"))
}
