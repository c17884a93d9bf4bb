package fetch_test

import (
	"net"
	"net/netip"
	"testing"

	"github.com/imagegen/imagegen/fetch"
)

// FuzzAllowedAgreesWithNetip checks the SSRF guard's address test
// against net/netip's own classification: an address the guard allows
// is, as it is, unmapped from IPv4-mapped IPv6, and as the IPv4 address
// that an IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) or 6to4
// (2002::/16) address embeds, never loopback, private, link-local,
// unspecified, multicast or otherwise not global unicast. It also
// checks that Allowed (net.IP, in its 4- and 16-byte forms) and
// AllowedAddr answer alike, and that a zone changes nothing.
func FuzzAllowedAgreesWithNetip(f *testing.F) {
	for _, s := range []string{
		"8.8.8.8", "127.0.0.1", "::1", "::ffff:127.0.0.1", "::ffff:8.8.8.8", "64:ff9b::7f00:1", "64:ff9b::808:808",
		"::7f00:1", "2002:7f00:1::1", "2002:808:808::1", "169.254.169.254", "fe80::1", "fd00::1", "ff02::1",
		"0.0.0.0", "::", "255.255.255.255", "2606:4700::1111", "100.64.0.1", "::ffff:0:7f00:1", "64:ff9b:1::a00:1",
	} {
		f.Add(netip.MustParseAddr(s).AsSlice())
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := netip.AddrFromSlice(b)
		if !ok {
			if a, ok = parse(string(b)); !ok {
				return
			}
		}
		allowed := fetch.AllowedAddr(a)
		if a.Zone() == "" {
			if got := fetch.Allowed(net.IP(a.AsSlice())); got != allowed {
				t.Fatalf("Allowed(%v) = %v, AllowedAddr = %v", a, got, allowed)
			}
			if got := fetch.Allowed(net.IP(a.AsSlice()).To16()); got != allowed {
				t.Fatalf("Allowed(16-byte %v) = %v, AllowedAddr = %v", a, got, allowed)
			}
		}
		if a.Is6() {
			if got := fetch.AllowedAddr(a.WithZone("eth0")); got != allowed {
				t.Fatalf("AllowedAddr(%v%%eth0) = %v, without the zone %v", a, got, allowed)
			}
		}
		if !allowed {
			return
		}
		for _, v := range views(a.WithZone("")) {
			if why := notPublic(v); why != "" {
				t.Fatalf("AllowedAddr(%v) = true, but %v is %s", a, v, why)
			}
		}
	})
}

// parse reads s as an address, with or without a zone.
func parse(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	return a, err == nil
}

// views are a and every IPv4 address a carries that a host on the path
// might connect to in its place.
func views(a netip.Addr) []netip.Addr {
	out := []netip.Addr{a, a.Unmap()}
	if !a.Is6() || a.Is4In6() {
		return out
	}
	b := a.As16()
	embedded := func(off int) netip.Addr { return netip.AddrFrom4([4]byte(b[off : off+4])) }
	switch {
	case netip.MustParsePrefix("::/96").Contains(a): // IPv4-compatible
		out = append(out, embedded(12))
	case netip.MustParsePrefix("64:ff9b::/96").Contains(a): // NAT64
		out = append(out, embedded(12))
	case netip.MustParsePrefix("2002::/16").Contains(a): // 6to4
		out = append(out, embedded(2))
	}
	return out
}

// notPublic names the class net/netip puts v in when it is not a public
// unicast address, or returns "".
func notPublic(v netip.Addr) string {
	switch {
	case v.IsLoopback():
		return "loopback"
	case v.IsPrivate():
		return "private"
	case v.IsLinkLocalUnicast():
		return "link-local"
	case v.IsLinkLocalMulticast(), v.IsInterfaceLocalMulticast(), v.IsMulticast():
		return "multicast"
	case v.IsUnspecified():
		return "unspecified"
	case !v.IsGlobalUnicast():
		return "not global unicast"
	}
	return ""
}
