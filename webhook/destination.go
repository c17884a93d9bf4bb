package webhook

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/imagegen/imagegen/fetch"
)

// destination names a callback's receiver: its URL's host and port, as
// one name however the URL spells them, so that one receiver is one
// destination for PerDestination. The host is taken as the sender's
// transport dials it (a non-ASCII host in its IDNA form, so
// "ｅｘａｍｐｌｅ.com" is example.com), in lower case, without a trailing
// dot, an IP literal in its one canonical form (2001:db8:0::1 is
// 2001:db8::1, ::ffff:8.8.8.8 is 8.8.8.8); the port as a number, the
// scheme's default when none is written ("0443" and "" are 443 for
// https).
func destination(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	port := u.Port()
	if n, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(n)
	}
	if port == "" {
		port = "443"
		if strings.EqualFold(u.Scheme, "http") {
			port = "80"
		}
	}
	host := strings.TrimSuffix(strings.ToLower(fetch.TransportHost(u.Hostname())), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	return net.JoinHostPort(host, port)
}
