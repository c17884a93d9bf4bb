package fetch_test

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/fetch"
)

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		class string
		ips   []string
		want  bool
	}{
		{"public", []string{"93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"}, true},
		{"loopback", []string{"127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1", "64:ff9b::7f00:1"}, false},
		{"private 10/8", []string{"10.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1"}, false},
		{"private 172.16/12", []string{"172.16.0.1", "172.31.255.255", "::ffff:172.16.0.1"}, false},
		{"private 192.168/16", []string{"192.168.0.1", "::ffff:192.168.1.1"}, false},
		{"link-local and metadata", []string{"169.254.169.254", "169.254.0.1", "fe80::1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe"}, false},
		{"Azure's platform endpoint (WireServer)", []string{"168.63.129.16", "::ffff:168.63.129.16", "64:ff9b::a83f:8110"}, false},
		{"unique-local", []string{"fc00::1", "fd12:3456::1"}, false},
		{"CGNAT", []string{"100.64.0.1", "100.127.255.255", "::ffff:100.64.0.1"}, false},
		{"unspecified", []string{"0.0.0.0", "::", "::ffff:0.0.0.0"}, false},
		{"this network 0/8", []string{"0.1.2.3", "::ffff:0.1.2.3"}, false},
		{"multicast", []string{"224.0.0.1", "239.255.255.250", "ff02::1", "::ffff:224.0.0.1"}, false},
		{"broadcast and reserved 240/4", []string{"255.255.255.255", "240.0.0.1", "::ffff:255.255.255.255"}, false},
		{"IETF 192.0.0/24", []string{"192.0.0.1", "::ffff:192.0.0.170"}, false},
		{"benchmarking 198.18/15", []string{"198.18.0.1", "198.19.255.255", "::ffff:198.18.0.1", "2001:2::1"}, false},
		{"IPv4-compatible", []string{"::7f00:1", "::a00:1"}, false},
		{"6to4 and Teredo", []string{"2002:7f00:1::1", "2001:0:4136:e378::1", "192.88.99.1", "::ffff:192.88.99.1"}, false},
		{"IETF 2001::/23 (local anycast)", []string{"2001:1::1", "2001:1::2", "2001:1::3", "2001:4:112::1", "2001:1ff::1"}, false},
		{"documentation", []string{"3fff::1", "3fff:fff::1", "2001:db8::1", "192.0.2.1", "198.51.100.1", "203.0.113.1"}, false},
		{"IPv6 outside 2000::/3 (unallocated, SRv6)", []string{"dead:beef::1", "4000::1", "5f00::1", "1234::1", "e000::1", "fbff::1"}, false},
		{"public next to them", []string{"2001:200::1", "2003::1", "3ffe:fff::1", "192.88.100.1", "64:ff9b::c058:6401", "168.63.129.15", "168.63.129.17"}, true},
		{"invalid", []string{""}, false},
	} {
		t.Run(tc.class, func(t *testing.T) {
			for _, ip := range tc.ips {
				if got := fetch.Allowed(net.ParseIP(ip)); got != tc.want {
					t.Errorf("Allowed(%q) = %v, want %v", ip, got, tc.want)
				}
			}
		})
	}
}

// The guard runs at connect time on the resolved addresses: a name that
// resolves to a blocked address is refused before any connection.
func TestGuardRefusesAtConnect(t *testing.T) {
	for name, ips := range map[string][]string{
		"loopback":          {"127.0.0.1"},
		"metadata":          {"169.254.169.254"},
		"private":           {"10.1.2.3"},
		"mapped loopback":   {"::ffff:127.0.0.1"},
		"ipv6 unique-local": {"fd00::1"},
		"one of several":    {"93.184.216.34", "192.168.1.1"}, // every address is checked
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			s := newSite(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pngOf(1, 1)) })
			d := dialTo(s)
			f, err := fetch.New(fetch.Config{Resolver: resolver(t, map[string][]string{"images.example": ips}), Dial: d.Dial})
			is.NoErr(err)
			_, _, err = f.Fetch(t.Context(), "http://images.example/a.png")
			is.True(errors.Is(err, fetch.ErrBlockedAddress))
			is.Equal(err.Error(), "images.example: address not allowed") // safe: names only what the user gave
			is.Equal(len(d.Asked()), 0)                                  // never dialled
			is.Equal(s.hits.Load(), int64(0))                            // never reached
		})
	}
}

// An IP literal is checked as it is, without a lookup.
func TestGuardChecksIPLiterals(t *testing.T) {
	is := is.New(t)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pngOf(1, 1)) })
	names := resolver(t, nil)
	f, err := fetch.New(fetch.Config{Resolver: names})
	is.NoErr(err)
	_, _, err = f.Fetch(t.Context(), s.URL+"/a.png") // http://127.0.0.1:port
	is.True(errors.Is(err, fetch.ErrBlockedAddress))
	_, _, err = f.Fetch(t.Context(), strings.Replace(s.URL, "127.0.0.1", "[::ffff:127.0.0.1]", 1))
	is.True(errors.Is(err, fetch.ErrBlockedAddress))
	is.Equal(s.hits.Load(), int64(0))
	is.Equal(names.calls.Load(), int64(0))
}

func TestAllowPrivateAndAllowHosts(t *testing.T) {
	is := is.New(t)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pngOf(2, 2)) })
	dev, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.NoErr(err)
	_, _, err = dev.Image(t.Context(), s.URL+"/a.png")
	is.NoErr(err)

	d := dialTo(s)
	f, err := fetch.New(fetch.Config{
		AllowHosts: []string{"CDN.provider.example"},
		Resolver:   resolver(t, map[string][]string{"cdn.provider.example": {"10.0.0.5"}, "other.example": {"10.0.0.5"}}),
		Dial:       d.Dial,
	})
	is.NoErr(err)
	_, _, err = f.Fetch(t.Context(), "http://cdn.provider.example/a.png")
	is.NoErr(err)
	is.Equal(d.Asked(), []string{"10.0.0.5:80"})
	_, _, err = f.Fetch(t.Context(), "http://other.example/a.png")
	is.True(errors.Is(err, fetch.ErrBlockedAddress))
	_, _, err = f.Fetch(t.Context(), "ftp://cdn.provider.example/a.png") // still http(s) only
	is.True(errors.Is(err, fetch.ErrBadURL))
}
