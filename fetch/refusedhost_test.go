package fetch_test

import (
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/fetch"
)

// refusedURLs are URLs whose host the guard refuses whatever DNS says,
// in the spellings that Go's URL parsing and the fetcher's dialling
// accept, with the address (or name) RefusedHost names.
var refusedURLs = []struct{ url, what string }{
	{"http://127.0.0.1/x.png", "127.0.0.1"},
	{"https://127.0.0.1:8443/x.png", "127.0.0.1"},
	{"http://[::1]/", "::1"},
	{"http://10.0.0.7/a", "10.0.0.7"},
	{"http://169.254.169.254/latest/meta-data", "169.254.169.254"},
	{"http://100.64.0.1/", "100.64.0.1"},
	{"http://[fd00::1]/", "fd00::1"},
	{"http://0.0.0.0/", "0.0.0.0"},
	// Spellings of an IPv4 address that inet_aton (getaddrinfo) reads.
	{"http://0x7f000001/", "127.0.0.1"},
	{"http://0X7F000001/", "127.0.0.1"},
	{"http://2130706433/", "127.0.0.1"},
	{"http://0177.0.0.1/", "127.0.0.1"},
	{"http://127.1/", "127.0.0.1"},
	{"http://0x7f.0.1/", "127.0.0.1"},
	{"http://012.0.0.7/", "10.0.0.7"},
	{"http://0/", "0.0.0.0"},
	{"http://127.0.0.1./", "127.0.0.1"},
	// IPv6 forms the guard unwraps, and zones.
	{"http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"},
	{"http://[::ffff:a9fe:a9fe]/", "::ffff:169.254.169.254"},
	{"http://[64:ff9b::a9fe:a9fe]/", "64:ff9b::a9fe:a9fe"},
	{"http://[::7f00:1]/", "::7f00:1"},
	{"http://[fe80::1%25eth0]/", "fe80::1"},
	{"http://[::1%25lo]:8080/", "::1"},
	// Non-ASCII hosts, which the transport maps through IDNA.
	{"http://１２７.０.０.１/", "127.0.0.1"},
	{"http://127。0。0。1/", "127.0.0.1"},
	{"http://%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1/", "127.0.0.1"},
	{"http://ｌｏｃａｌｈｏｓｔ/", "localhost"},
	// Localhost names (RFC 6761).
	{"http://localhost/", "localhost"},
	{"http://localhost:8080/a.png", "localhost"},
	{"http://LOCALHOST./", "localhost"},
	{"http://foo.localhost/", "localhost"},
	{"http://a.b.LocalHost.:8080/", "localhost"},
}

// acceptedURLs are URLs RefusedHost does not refuse: public literals in
// any spelling, and names, which only DNS can judge.
var acceptedURLs = []string{
	"http://93.184.216.34/a.png",
	"http://0x5db8d822/",              // 93.184.216.34
	"http://[::ffff:93.184.216.34]/",  // mapped
	"http://[64:ff9b::5db8:d822]/",    // NAT64 of a public address
	"http://[2606:4700::1111]/",       // public IPv6
	"https://images.example/a.png",    // a name
	"https://127.0.0.1.nip.io/a.png",  // a name (that resolves to loopback: refused at connect)
	"https://localhost.example/a.png", // not under .localhost
	"https://notlocalhost/a.png",      // nor this
	"https://localhost-cdn.example/",  // nor this
	"http://1.2.3.4.5/",               // five parts: a name
	"http://08.0.0.1/",                // not octal: a name
	"http://4294967296/",              // over 32 bits: a name
	"http://0x/",                      // no hex digit: a name
	"http://bücher.example/",          // IDNA, a name
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("url.Parse(%q): %v", raw, err)
	}
	return u.Hostname()
}

func TestRefusedHost(t *testing.T) {
	for _, tc := range refusedURLs {
		what, refused := fetch.Config{}.RefusedHost(hostOf(t, tc.url))
		if !refused || what != tc.what {
			t.Errorf("RefusedHost(host of %s) = %q, %v; want %q, true", tc.url, what, refused, tc.what)
		}
	}
	for _, raw := range acceptedURLs {
		if what, refused := (fetch.Config{}).RefusedHost(hostOf(t, raw)); refused {
			t.Errorf("RefusedHost(host of %s) = %q, true; want not refused", raw, what)
		}
	}
}

// AllowPrivate refuses nothing; AllowHosts exempts its hosts (in any
// case, with or without a trailing dot) and no others.
func TestRefusedHostFollowsThePolicy(t *testing.T) {
	is := is.New(t)
	dev := fetch.Config{AllowPrivate: true}
	for _, tc := range refusedURLs {
		_, refused := dev.RefusedHost(hostOf(t, tc.url))
		is.True(!refused)
	}
	c := fetch.Config{AllowHosts: []string{"localhost", "10.0.0.7", "::1", "IMG.localhost."}}
	for _, raw := range []string{"http://localhost/", "http://LOCALHOST./", "http://10.0.0.7/", "http://[::1]/", "http://img.localhost/"} {
		_, refused := c.RefusedHost(hostOf(t, raw))
		is.True(!refused) // exempt
	}
	for _, raw := range []string{"http://127.0.0.1/", "http://other.localhost/", "http://0xa000007/", "http://[::1%25lo]/"} {
		_, refused := c.RefusedHost(hostOf(t, raw))
		is.True(refused) // not in AllowHosts as written
	}

	// A Fetcher answers for its Config; a nil one for the default.
	f, err := fetch.New(c)
	is.NoErr(err)
	_, refused := f.RefusedHost("localhost")
	is.True(!refused)
	_, refused = f.RefusedHost("127.0.0.1")
	is.True(refused)
	var none *fetch.Fetcher
	what, refused := none.RefusedHost("localhost")
	is.True(refused)
	is.Equal(what, "localhost")
}

// What RefusedHost refuses, the fetcher refuses when it connects,
// before any lookup or dial: the check at submit and the guard agree.
func TestFetcherRefusesWhatRefusedHostRefuses(t *testing.T) {
	for _, tc := range refusedURLs {
		t.Run(tc.url, func(t *testing.T) {
			is := is.New(t)
			s := newSite(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pngOf(1, 1)) })
			names, d := resolver(t, nil), dialTo(s) // any lookup fails the test
			f, err := fetch.New(fetch.Config{Resolver: names, Dial: d.Dial})
			is.NoErr(err)
			_, _, err = f.Fetch(t.Context(), tc.url)
			is.True(errors.Is(err, fetch.ErrBlockedAddress))
			is.Equal(names.calls.Load(), int64(0))
			is.Equal(len(d.Asked()), 0)
			is.Equal(s.hits.Load(), int64(0))
		})
	}
}

// AllowHosts matches the host the transport dials with or without a
// trailing dot, as it matches at submit.
func TestAllowHostsIgnoresATrailingDot(t *testing.T) {
	is := is.New(t)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pngOf(1, 1)) })
	d := dialTo(s)
	f, err := fetch.New(fetch.Config{
		AllowHosts: []string{"cdn.provider.example"},
		Resolver:   resolver(t, map[string][]string{"cdn.provider.example.": {"10.0.0.5"}}),
		Dial:       d.Dial,
	})
	is.NoErr(err)
	_, _, err = f.Fetch(t.Context(), "http://cdn.provider.example./a.png")
	is.NoErr(err)
	is.Equal(d.Asked(), []string{"10.0.0.5:80"})
	_, refused := f.RefusedHost("cdn.provider.example.")
	is.True(!refused)
}
