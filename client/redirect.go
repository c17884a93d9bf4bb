package client

import (
	"errors"
	"net/http"
)

// errDowngrade refuses a redirect that would send the API key over
// plain http.
var errDowngrade = errors.New("client: refused a redirect to plain http that would carry the API key unencrypted")

// keepEncrypted is the default http.Client's CheckRedirect: net/http's
// policy (at most 10 redirects), and no redirect to plain http that
// carries the Authorization header. net/http copies that header onto a
// redirect to the same host (or a subdomain) whatever its scheme, so a
// server, or a proxy before it, that sent an https request on to http
// would have the key sent in clear; a redirect to another host (an
// image's CDN) goes without it and is followed.
func keepEncrypted(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("client: stopped after 10 redirects")
	}
	if req.URL.Scheme != "https" && req.Header.Get("Authorization") != "" {
		return errDowngrade
	}
	return nil
}
