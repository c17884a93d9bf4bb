package client

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// errDowngrade refuses a redirect that would send the API key over
// plain http.
var errDowngrade = errors.New("client: refused a redirect to plain http that would carry the API key unencrypted")

// keepEncrypted is the default http.Client's CheckRedirect: net/http's
// policy (at most 10 redirects), the API key sent only to the API's own
// origin, and never over plain http. net/http copies the Authorization
// header onto a redirect to the same host name whatever its port or
// scheme, and to any subdomain; here a redirect to another origin (another
// port of the host, a subdomain, another host such as an image's CDN)
// goes without it and is followed, and one to plain http that net/http
// would have carried it on (a server, or a proxy before it, that sent an
// https request on to http) is refused.
func keepEncrypted(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("client: stopped after 10 redirects")
	}
	if req.URL.Scheme != "https" && req.Header.Get("Authorization") != "" {
		return errDowngrade
	}
	if !keyOrigin(via[0].URL, req.URL) {
		req.Header.Del("Authorization")
	}
	return nil
}

// keyOrigin reports whether a redirect from the first request's URL to
// to stays at the origin the API key was given for: the same scheme,
// host name and port (the scheme's default when none is written), or the
// move from http to https of the same host on the default ports.
func keyOrigin(from, to *url.URL) bool {
	if !strings.EqualFold(from.Hostname(), to.Hostname()) {
		return false
	}
	fromPort, toPort := portOf(from), portOf(to)
	if strings.EqualFold(from.Scheme, to.Scheme) {
		return fromPort == toPort
	}
	return strings.EqualFold(from.Scheme, "http") && fromPort == "80" &&
		strings.EqualFold(to.Scheme, "https") && toPort == "443"
}

// portOf is u's port, or its scheme's default.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return strings.TrimLeft(p, "0")
	}
	if strings.EqualFold(u.Scheme, "http") {
		return "80"
	}
	return "443"
}
