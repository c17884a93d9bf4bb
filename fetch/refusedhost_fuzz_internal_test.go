package fetch

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// FuzzRefusedHost checks the check made at submit (Config.RefusedHost)
// on any host text: an IP literal that net/netip reads (IPv6 with or
// without a zone) and the guard does not allow is refused, and named as
// that address; an IPv4 address in any inet_aton spelling
// (decimal, octal, hex, one to four parts), read here by an independent
// strconv-based reader, is refused exactly when the guard does not allow
// it; whatever is refused names a refused address or "localhost"; and a
// refusal does not depend on the case of ASCII letters.
func FuzzRefusedHost(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1", "127.1", "0x7f000001", "2130706433", "0177.0.0.1", "0x7f.0.1", "012.0.0.7", "0", "0x", "08.0.0.1",
		"4294967296", "1.2.3.4.5", "::1", "::ffff:127.0.0.1", "fe80::1%eth0", "64:ff9b::a9fe:a9fe", "localhost", "a.LOCALHOST.",
		"１２７.０.０.１", "images.example", "8.8.8.8", "0x08080808", "127.0.0.1.", "0X7F.1", "00000000000000000000177.1",
		"169.254.43518", "0xa9.0xfe.0xa9fe", "[::1]", "::ffff:0:7f00:1", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		what, refused := Config{}.RefusedHost(host)
		if refused != (what != "") {
			t.Fatalf("RefusedHost(%q) = %q, %v", host, what, refused)
		}
		if refused && what != "localhost" {
			a, err := netip.ParseAddr(what)
			if err != nil || allowed(a) {
				t.Fatalf("RefusedHost(%q) names %q, not a refused address", host, what)
			}
		}
		if w, r := (Config{}).RefusedHost(asciiUpper(host)); r != refused || w != what {
			t.Fatalf("RefusedHost(%q) = %q, %v but in upper case %q, %v", host, what, refused, w, r)
		}
		h := TransportHost(host)
		if a, err := netip.ParseAddr(h); err == nil && !allowed(a) && !refused {
			t.Fatalf("RefusedHost(%q) lets %v through", host, a)
		}
		if strings.IndexByte(h, ':') >= 0 {
			return // IPv6: no resolver reads "::1." as an address
		}
		if a, ok := atonReference(strings.TrimSuffix(h, ".")); ok {
			if want := !allowed(a); refused != want || (want && what != a.String()) {
				t.Fatalf("RefusedHost(%q) = %q, %v; inet_aton reads %v (allowed %v)", host, what, refused, a, allowed(a))
			}
		} else if refused && what != "localhost" {
			t.Fatalf("RefusedHost(%q) = %q, but it is no IPv4 spelling", host, what)
		}
	})
}

// atonReference reads s as inet_aton does, with strconv: 1 to 4
// dot-separated parts, each 0x-hex, 0-octal or decimal, the last one
// filling the bytes the others leave.
func atonReference(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base, digits := 10, p
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, digits = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		if digits == "" || strings.ContainsAny(digits, "+-_") {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var ip uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		ip |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(32-8*(len(vals)-1)) {
		return netip.Addr{}, false
	}
	ip |= last
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

// asciiUpper is s with its ASCII letters in upper case, and nothing else
// changed (strings.ToUpper would map some non-ASCII letters to ASCII).
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
