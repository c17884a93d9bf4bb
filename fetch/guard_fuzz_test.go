package fetch_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/imagegen/imagegen/fetch"
)

// FuzzGuardDialsOnlyAllowedAddresses drives Fetch and Post with any URL
// while DNS answers any name with any address (or none), and checks the
// guard end to end: every address the Fetcher dials is one AllowedAddr
// allows, whatever the URL spells (IP literals in any form, zones, IDNA,
// ports) and whatever DNS says; a host that RefusedHost refuses is
// neither looked up nor dialled and fails with ErrBlockedAddress. Dial
// never connects (it records the address and fails), so nothing leaves
// the process.
func FuzzGuardDialsOnlyAllowedAddresses(f *testing.F) {
	for _, tc := range []struct{ url, answer string }{
		{"http://images.example/a.png", "93.184.216.34"},
		{"http://images.example/a.png", "127.0.0.1"},
		{"http://images.example/a.png", "::ffff:169.254.169.254"},
		{"http://images.example/a.png", "64:ff9b::a00:1"},
		{"https://images.example:8443/a.png", "fe80::1"},
		{"http://127.0.0.1/", "93.184.216.34"},
		{"http://0x7f000001/", "93.184.216.34"},
		{"http://[::ffff:7f00:1]/", ""},
		{"http://[fe80::1%25eth0]:80/", ""},
		{"http://１２７.０.０.１/", ""},
		{"http://localhost./", "93.184.216.34"},
		{"http://8.8.8.8/", ""},
		{"http://[2606:4700::1111]/", ""},
	} {
		var answer []byte
		if tc.answer != "" {
			answer = netip.MustParseAddr(tc.answer).AsSlice()
		}
		f.Add(tc.url, answer)
	}
	f.Fuzz(func(t *testing.T, rawURL string, answer []byte) {
		dns := &anyName{answer: answer}
		dials := &refusingDialer{}
		fr, err := fetch.New(fetch.Config{Resolver: dns, Dial: dials.Dial, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, _, fetchErr := fr.Fetch(t.Context(), rawURL)
		_, postErr := fr.Post(t.Context(), rawURL, nil, []byte("{}"))
		for _, addr := range dials.Asked() {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("dialled %q, not host:port", addr)
			}
			a, err := netip.ParseAddr(host)
			if err != nil {
				t.Fatalf("dialled %q, not an IP literal", addr)
			}
			if !fetch.AllowedAddr(a) {
				t.Fatalf("fetching %q (DNS answering %v) dialled %v", rawURL, answer, a)
			}
		}
		u, err := url.Parse(rawURL)
		if err != nil {
			return
		}
		if what, refused := (fetch.Config{}).RefusedHost(u.Hostname()); refused && (u.Scheme == "http" || u.Scheme == "https") && u.User == nil {
			if dns.Calls() != 0 || len(dials.Asked()) != 0 {
				t.Fatalf("%q: RefusedHost refuses %s, but the Fetcher looked it up or dialled", rawURL, what)
			}
			for _, err := range []error{fetchErr, postErr} {
				if !errors.Is(err, fetch.ErrBlockedAddress) && !errors.Is(err, fetch.ErrBadURL) {
					t.Fatalf("%q: RefusedHost refuses %s, but the Fetcher failed with %v", rawURL, what, err)
				}
			}
		}
	})
}

// anyName is a Resolver that answers every name with one address, or
// with none when answer is not 4 or 16 bytes.
type anyName struct {
	answer []byte
	mu     sync.Mutex
	calls  int
}

func (r *anyName) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	r.calls++
	r.mu.Unlock()
	if len(r.answer) != 4 && len(r.answer) != 16 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []net.IPAddr{{IP: net.IP(r.answer)}}, nil
}

func (r *anyName) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// refusingDialer records the addresses it is asked for and connects to
// none of them.
type refusingDialer struct {
	mu    sync.Mutex
	asked []string
}

func (d *refusingDialer) Dial(_ context.Context, _, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.asked = append(d.asked, addr)
	d.mu.Unlock()
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
}

func (d *refusingDialer) Asked() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.asked...)
}
