package netprefix

import (
	"net/netip"
	"testing"
)

func TestUnmap(t *testing.T) {
	for in, want := range map[string]string{
		"::ffff:10.0.0.0/104":     "10.0.0.0/8",
		"::ffff:198.51.100.9/128": "198.51.100.9/32",
		"::ffff:10.1.2.3/104":     "10.0.0.0/8", // masked
		"::ffff:0:0/80":           "::/80",      // more than mapped addresses: kept IPv6 (and masked)
		"10.0.0.0/8":              "10.0.0.0/8",
		"2001:db8::/32":           "2001:db8::/32",
	} {
		if got := Unmap(netip.MustParsePrefix(in)); got != netip.MustParsePrefix(want) {
			t.Errorf("Unmap(%s) = %s, want %s", in, got, want)
		}
	}
}
