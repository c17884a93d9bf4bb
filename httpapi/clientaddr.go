package httpapi

import (
	"net/http"
	"net/netip"
	"strings"
)

// clientAddr is the address of the client that sent r: the peer address,
// or, when the peer is one of cfg.TrustedProxies, the rightmost address in
// cfg.ForwardedHeader (X-Forwarded-For, or Forwarded per RFC 7239) that is
// not itself a trusted proxy. Only that one header is read: what a client
// wrote into it sits left of what the trusted proxies appended, so it is
// never believed, and the other header (which proxies pass through
// untouched) is ignored. It returns the zero
// Addr when no address can be read (clientGroup maps that to one shared
// group).
func (h *Handler) clientAddr(r *http.Request) netip.Addr {
	peer := parseHost(r.RemoteAddr)
	if !h.trusted(peer) {
		return peer
	}
	var hops []string
	if h.cfg.ForwardedHeader == "Forwarded" {
		hops = forwardedFor(r.Header)
	} else {
		hops = xForwardedFor(r.Header)
	}
	addr := peer
	for i := len(hops) - 1; i >= 0; i-- {
		hop := parseHost(hops[i])
		if !hop.IsValid() {
			return addr // "unknown" or obfuscated: the last hop we can name
		}
		addr = hop
		if !h.trusted(hop) {
			return hop
		}
	}
	return addr
}

// trusted reports that a (unmapped, as parseHost reads it) is one of
// cfg.TrustedProxies (unmapped by New, so that a proxy written
// IPv4-mapped matches its IPv4 peers).
func (h *Handler) trusted(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range h.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientGroup is the name under which failures of the client at a are
// counted: an IPv4 address, or the /64 of an IPv6 address (one subscriber
// usually holds a whole /64, so single IPv6 addresses would limit
// nothing). Unreadable addresses share the group "unknown".
func clientGroup(a netip.Addr) string {
	if !a.IsValid() {
		return "unknown"
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}

// PeerClientIP names the client of r as Config.ClientIP's default does
// with no trusted proxy: its peer address, an IPv6 one by its /64 (see
// clientGroup). Front ends that count failed sign-ins without an API
// Handler (the console's default) use it, so that one client is one key
// there too: rotating addresses inside a /64, or an IPv4 address shown
// IPv4-mapped or with a zone, buys no further guesses.
func PeerClientIP(r *http.Request) string { return clientGroup(parseHost(r.RemoteAddr)) }

// parseHost reads an IP address with or without a port ("192.0.2.1",
// "192.0.2.1:80", "[2001:db8::1]:80", "2001:db8::1").
func parseHost(s string) netip.Addr {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap()
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") { // "[2001:db8::1]"
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return a.Unmap()
		}
	}
	return netip.Addr{}
}

// xForwardedFor lists the hops of every X-Forwarded-For header, in order.
func xForwardedFor(h http.Header) []string {
	var hops []string
	for _, v := range h.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	return hops
}

// forwardedFor lists the for= parameters of every Forwarded header
// element, in order (nil without the header). An element without for=
// counts as an unreadable hop.
func forwardedFor(h http.Header) []string {
	values := h.Values("Forwarded")
	if len(values) == 0 {
		return nil
	}
	var hops []string
	for _, v := range values {
		for _, elem := range strings.Split(v, ",") {
			hop := ""
			for _, pair := range strings.Split(elem, ";") {
				name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(name, "for") {
					hop = strings.Trim(value, `"`)
				}
			}
			hops = append(hops, hop)
		}
	}
	return hops
}
