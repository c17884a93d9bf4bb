package ratelimit

import (
	"encoding/binary"
	"hash/maphash"
	"net/netip"
	"strings"
)

// clientKey identifies a client for the IP limiter: an IPv4 address, or
// the /64 prefix of an IPv6 address (one subscriber usually holds a whole
// /64, so limiting single IPv6 addresses would limit nothing).
type clientKey struct{ hi, lo uint64 }

// unparsedLo marks the key of every address that does not parse,
// clientKey{lo: unparsedLo}. No address maps to it: IPv6 keys have
// lo == 0 and IPv4 keys (held as IPv4-mapped IPv6) have 0xffff in lo.
const unparsedLo = 1

// clientKeyOf parses addr, either a bare IP ("192.0.2.1", "2001:db8::1")
// or an IP and port as in http.Request.RemoteAddr ("192.0.2.1:1234",
// "[2001:db8::1]:1234"). IPv4-mapped IPv6 addresses count as IPv4 and
// zones are ignored. Anything that does not parse maps to one shared key,
// so malformed addresses share a single allowance.
func clientKeyOf(addr string) clientKey {
	var (
		ip  netip.Addr
		err error
	)
	// Pick the parser up front: a failed parse allocates its error.
	if strings.HasPrefix(addr, "[") || strings.Count(addr, ":") == 1 {
		var ap netip.AddrPort
		ap, err = netip.ParseAddrPort(addr)
		ip = ap.Addr()
	} else {
		ip, err = netip.ParseAddr(addr)
	}
	if err != nil {
		return clientKey{lo: unparsedLo}
	}
	ip = ip.Unmap()
	b := ip.As16()
	k := clientKey{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}
	if ip.Is6() {
		k.lo = 0 // keep the /64
	}
	return k
}

// hashClientKey hashes k for the table's shard choice.
func hashClientKey(seed maphash.Seed, k clientKey) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], k.hi)
	binary.LittleEndian.PutUint64(b[8:], k.lo)
	return maphash.Bytes(seed, b[:])
}
