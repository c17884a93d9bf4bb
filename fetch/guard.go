package fetch

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// blocked are the address ranges the SSRF guard refuses. IPv4-mapped
// IPv6 addresses are unmapped first, NAT64 addresses (64:ff9b::/96)
// are judged by the IPv4 address they embed, and any other IPv6 address
// outside 2000::/3 is refused (globalUnicast6) before these are looked
// at; those under it are kept here so that the list still names them.
var blocked = mustPrefixes(
	"0.0.0.0/8",        // "this network", unspecified
	"10.0.0.0/8",       // private
	"100.64.0.0/10",    // carrier-grade NAT
	"127.0.0.0/8",      // loopback
	"169.254.0.0/16",   // link-local, cloud metadata (169.254.169.254)
	"168.63.129.16/32", // Azure's platform endpoint (WireServer: a VM's agent configuration, extension settings), public but answered inside every Azure VM's network
	"172.16.0.0/12",    // private
	"192.0.0.0/24",     // IETF protocol assignments
	"192.0.2.0/24",     // documentation
	"192.168.0.0/16",   // private
	"192.88.99.0/24",   // 6to4 relay anycast (deprecated): the nearest relay router
	"198.18.0.0/15",    // benchmarking
	"198.51.100.0/24",  // documentation
	"203.0.113.0/24",   // documentation
	"224.0.0.0/4",      // multicast
	"240.0.0.0/4",      // reserved, broadcast 255.255.255.255
	"::/96",            // unspecified ::, loopback ::1, IPv4-compatible (deprecated)
	"::ffff:0:0:0/96",  // IPv4-translated (SIIT)
	"64:ff9b:1::/48",   // local-use NAT64
	"100::/64",         // discard
	"2001::/23",        // IETF protocol assignments, as 192.0.0.0/24: Teredo (2001::/32, embeds an IPv4 address), benchmarking (2001:2::/48), and the anycast addresses answered by a server near the sender, PCP (2001:1::1, the home router), TURN (2001:1::2), DNS-SD (2001:1::3)
	"2001:db8::/32",    // documentation
	"2002::/16",        // 6to4: embeds an IPv4 address
	"3fff::/20",        // documentation
	"fc00::/7",         // unique-local
	"fe80::/10",        // link-local
	"fec0::/10",        // site-local (deprecated)
	"ff00::/8",         // multicast
)

// nat64 is the well-known NAT64 prefix; its last 32 bits are an IPv4 address.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// globalUnicast6 is the only IPv6 space allocated for global unicast
// (RFC 4291, IANA): an IPv6 address outside it (and outside nat64) is
// not routed on the Internet, whatever it is used for on a private
// network (an unallocated prefix such as dead:beef::/32 for a lab, the
// segment routing SIDs of 5f00::/16), so it is refused.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// mustPrefixes parses constant prefixes; a typo is a programming error.
func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Allowed reports whether the SSRF guard lets a connection go to ip.
func Allowed(ip net.IP) bool {
	addr, ok := netip.AddrFromSlice(ip)
	return ok && allowed(addr)
}

// AllowedAddr is Allowed for a netip.Addr (a zone is ignored).
func AllowedAddr(addr netip.Addr) bool { return allowed(addr) }

func allowed(addr netip.Addr) bool {
	if !addr.IsValid() {
		return false
	}
	addr = addr.Unmap().WithZone("")
	if nat64.Contains(addr) {
		b := addr.As16()
		addr = netip.AddrFrom4([4]byte(b[12:]))
	}
	if addr.Is6() && !globalUnicast6.Contains(addr) {
		return false
	}
	for _, p := range blocked {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// RefusedHost reports whether a Fetcher of this Config refuses every
// connection to host (a URL's Hostname) whatever DNS answers, and names
// what it refuses: the address the host spells, or "localhost". A
// service asks it at submit, so that a URL that can only fail is
// refused at once. The host is first mapped as the HTTP transport maps
// it before dialling (a non-ASCII host through IDNA, so that
// "１２７.０.０.１" is 127.0.0.1); then, ignoring case and one trailing
// dot, it is refused when it is
//
//   - an IP literal the guard refuses (Allowed), as net/netip reads it:
//     IPv4, IPv6 with or without a zone, IPv4-mapped, NAT64;
//   - an IPv4 address in one of the other spellings a system resolver
//     (inet_aton) reads as one: 0x7f000001, 2130706433, 0177.0.0.1, 127.1;
//   - localhost, or a name under .localhost (RFC 6761: loopback).
//
// Nothing is refused with AllowPrivate, nor a host in AllowHosts. Any
// other name is not refused here: whether it is allowed depends on what
// it resolves to, which the guard checks when it connects.
func (o Config) RefusedHost(host string) (what string, refused bool) {
	if o.AllowPrivate {
		return "", false
	}
	host = TransportHost(host)
	if o.exempt(host) {
		return "", false
	}
	return refusedHost(host)
}

// RefusedHost is Config.RefusedHost for the Fetcher's Config. A nil
// *Fetcher answers for the default Config.
func (f *Fetcher) RefusedHost(host string) (what string, refused bool) {
	if f == nil {
		return Config{}.RefusedHost(host)
	}
	return f.o.RefusedHost(host)
}

// TransportHost is host as net/http's transport passes it to the
// dialer: a non-ASCII host in its IDNA ASCII form, when it has one (so
// "ｅｘａｍｐｌｅ.com" is example.com), else host as it is.
func TransportHost(host string) string {
	for i := 0; i < len(host); i++ {
		if host[i] >= utf8.RuneSelf {
			if v, err := idna.Lookup.ToASCII(host); err == nil {
				return v
			}
			return host
		}
	}
	return host
}

// exempt reports whether host (as the transport dials it) is one of
// AllowHosts, in any case, with or without a trailing dot.
func (o *Config) exempt(host string) bool {
	host = strings.TrimSuffix(host, ".")
	for _, h := range o.AllowHosts {
		if strings.EqualFold(strings.TrimSuffix(h, "."), host) {
			return true
		}
	}
	return false
}

// refusedHost is RefusedHost without the exemptions, for a host as the
// transport dials it. It does not allocate unless it refuses.
func refusedHost(host string) (what string, refused bool) {
	if strings.IndexByte(host, ':') >= 0 { // IPv6, perhaps with a zone; names have no colon
		a, err := netip.ParseAddr(host)
		if err != nil || allowed(a) {
			return "", false
		}
		return a.WithZone("").String(), true
	}
	host = strings.TrimSuffix(host, ".")
	if a, ok := parseLegacyIPv4(host); ok { // dotted decimal, as net/netip reads it, and inet_aton's other spellings
		if allowed(a) {
			return "", false
		}
		return a.String(), true
	}
	const localhost = "localhost"
	if n := len(host); strings.EqualFold(host, localhost) ||
		n > len(localhost) && host[n-len(localhost)-1] == '.' && strings.EqualFold(host[n-len(localhost):], localhost) {
		return localhost, true
	}
	return "", false
}

// parseLegacyIPv4 reads s as inet_aton does (and so getaddrinfo, the
// resolver of cgo builds): one to four parts separated by dots, each
// decimal, octal (a leading 0) or hexadecimal (0x); the last part fills
// the bytes the others leave (127.1 is 127.0.0.1, 2130706433 too).
func parseLegacyIPv4(s string) (netip.Addr, bool) {
	var parts [4]uint64
	n := 0
	for {
		if n == len(parts) {
			return netip.Addr{}, false
		}
		end := strings.IndexByte(s, '.')
		if end < 0 {
			end = len(s)
		}
		v, ok := parseLegacyPart(s[:end])
		if !ok {
			return netip.Addr{}, false
		}
		parts[n] = v
		n++
		if end == len(s) {
			break
		}
		s = s[end+1:]
	}
	var ip uint64
	for i := range n - 1 { // every part but the last is one byte
		if parts[i] > 0xff {
			return netip.Addr{}, false
		}
		ip |= parts[i] << (8 * (3 - i))
	}
	last := parts[n-1]
	if last >= 1<<(8*(5-n)) { // 32 bits for one part, 8 for the fourth
		return netip.Addr{}, false
	}
	ip |= last
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

// parseLegacyPart reads one part of parseLegacyIPv4: decimal, octal
// after a leading 0, hexadecimal after 0x or 0X; at most 32 bits.
func parseLegacyPart(s string) (uint64, bool) {
	base := uint64(10)
	switch {
	case len(s) > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		var d uint64
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'f':
			d = uint64(c-'a') + 10
		case 'A' <= c && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		if v = v*base + d; v > 0xffffffff {
			return 0, false
		}
	}
	return v, true
}

// dial is the transport's DialContext: it resolves the host itself,
// checks every address, and connects to a checked one by IP literal
// (dialChecked), so nothing resolves the name a second time. A host that RefusedHost
// refuses is refused before any lookup.
func (f *Fetcher) dial(ctx context.Context, network, hostport string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	guarded := !f.o.AllowPrivate && !f.o.exempt(host)
	if guarded {
		if _, refused := refusedHost(host); refused {
			return nil, fmt.Errorf("%s: %w", host, ErrBlockedAddress)
		}
	}
	addrs, err := f.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	if guarded {
		for _, a := range addrs {
			if !allowed(a) {
				return nil, fmt.Errorf("%s: %w", host, ErrBlockedAddress)
			}
		}
	}
	return f.dialChecked(ctx, network, port, addrs)
}

// resolve returns host's addresses: an IP literal as it is, a name
// through Config.Resolver. An answer that is not an IP address fails.
func (f *Fetcher) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	ips, err := f.o.Resolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	addrs := make([]netip.Addr, len(ips))
	for i, ip := range ips {
		a, ok := netip.AddrFromSlice(ip.IP)
		if !ok {
			return nil, fmt.Errorf("%s: %w", host, ErrBlockedAddress)
		}
		addrs[i] = a.Unmap().WithZone(ip.Zone)
	}
	return addrs, nil
}
