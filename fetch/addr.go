package fetch

import (
	"net"
	"net/netip"
)

// blocked are the address ranges the SSRF guard refuses.
var blocked = mustPrefixes(
	"0.0.0.0/8",       // "this network", unspecified
	"10.0.0.0/8",      // private
	"100.64.0.0/10",   // carrier-grade NAT
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, cloud metadata (169.254.169.254)
	"172.16.0.0/12",   // private
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // documentation
	"192.168.0.0/16",  // private
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // documentation
	"203.0.113.0/24",  // documentation
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, broadcast
	"::/128",          // unspecified
	"::1/128",         // loopback
	"64:ff9b::/96",    // NAT64: embeds an IPv4 address
	"64:ff9b:1::/48",  // local NAT64
	"100::/64",        // discard
	"2001:db8::/32",   // documentation
	"fc00::/7",        // unique-local
	"fe80::/10",       // link-local
	"fec0::/10",       // site-local (deprecated)
	"ff00::/8",        // multicast
	"2002::/16",       // 6to4: embeds an IPv4 address
	"2001::/32",       // Teredo: embeds an IPv4 address
)

// mustPrefixes parses constant prefixes; a typo is a programming error.
func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Allowed reports whether the SSRF guard lets a connection go to ip.
// IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
func Allowed(ip net.IP) bool {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return false
	}
	addr = addr.Unmap()
	for _, p := range blocked {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}
