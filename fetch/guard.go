package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// blocked are the address ranges the SSRF guard refuses. IPv4-mapped
// IPv6 addresses are unmapped first, and NAT64 addresses (64:ff9b::/96)
// are judged by the IPv4 address they embed.
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
	"240.0.0.0/4",     // reserved, broadcast 255.255.255.255
	"::/96",           // unspecified ::, loopback ::1, IPv4-compatible (deprecated)
	"::ffff:0:0:0/96", // IPv4-translated (SIIT)
	"64:ff9b:1::/48",  // local-use NAT64
	"100::/64",        // discard
	"2001::/32",       // Teredo: embeds an IPv4 address
	"2001:2::/48",     // benchmarking
	"2001:db8::/32",   // documentation
	"2002::/16",       // 6to4: embeds an IPv4 address
	"fc00::/7",        // unique-local
	"fe80::/10",       // link-local
	"fec0::/10",       // site-local (deprecated)
	"ff00::/8",        // multicast
)

// nat64 is the well-known NAT64 prefix; its last 32 bits are an IPv4 address.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

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
	for _, p := range blocked {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// dial is the transport's DialContext: it resolves the host itself,
// checks every address, and connects to a checked one by IP literal, so
// nothing resolves the name a second time.
func (f *Fetcher) dial(ctx context.Context, network, hostport string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	addrs, err := f.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	if !f.o.AllowPrivate && !slices.Contains(f.o.AllowHosts, strings.ToLower(host)) {
		for _, a := range addrs {
			if !allowed(a) {
				return nil, fmt.Errorf("%s: %w", host, ErrBlockedAddress)
			}
		}
	}
	var errs []error
	for _, a := range addrs {
		conn, err := f.o.Dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
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
