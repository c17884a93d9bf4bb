package ratelimit

import (
	"testing"

	"github.com/matryer/is"
)

func TestClientKeyOf(t *testing.T) {
	same := [][]string{
		{"192.0.2.1", "192.0.2.1:1234", "::ffff:192.0.2.1", "[::ffff:192.0.2.1]:80"},
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", "[2001:db8:1:2::9]:443", "2001:db8:1:2::1%eth0"},
		{"not an ip", "", "@", "example.com:80", "192.0.2.1:notaport"},
	}
	for _, group := range same {
		for _, addr := range group {
			if clientKeyOf(addr) != clientKeyOf(group[0]) {
				t.Errorf("clientKeyOf(%q) != clientKeyOf(%q), want the same client", addr, group[0])
			}
		}
	}
	different := []string{
		"192.0.2.1", "192.0.2.2", "2001:db8:1:2::1", "2001:db8:1:3::1",
		"::", "0.0.0.0", "1::", "127.0.0.1", "not an ip",
	}
	seen := map[clientKey]string{}
	for _, addr := range different {
		k := clientKeyOf(addr)
		if prev, ok := seen[k]; ok {
			t.Errorf("clientKeyOf(%q) == clientKeyOf(%q), want different clients", addr, prev)
		}
		seen[k] = addr
	}
}

func TestClientKeyOfDoesNotAllocate(t *testing.T) {
	is := is.New(t)
	allocs := testing.AllocsPerRun(100, func() {
		_ = clientKeyOf("[2001:db8:1:2::9]:443")
		_ = clientKeyOf("192.0.2.1:1234")
	})
	is.Equal(allocs, 0.0)
}
