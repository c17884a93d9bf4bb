// Package netprefix reads the address prefixes an operator configures
// (trusted proxies) as the addresses they are matched against are read.
package netprefix

import "net/netip"

// Unmap returns p with an IPv4-mapped IPv6 prefix ("::ffff:10.0.0.0/104",
// as dual-stack listeners' logs show IPv4 peers) written as the IPv4
// prefix it covers ("10.0.0.0/8"), masked. Peers are compared unmapped,
// and netip.Prefix.Contains matches no IPv4 address to a mapped prefix.
// A prefix shorter than /96 covers more than mapped addresses and is
// kept as it is.
func Unmap(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked()
}
