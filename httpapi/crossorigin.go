package httpapi

import (
	"fmt"
	"net/http"

	"github.com/imagegen/imagegen"
)

// SameOriginOnly wraps a, an authenticator that trusts what a browser
// sends by itself (the host app's session cookie), so that a browser's
// unsafe request from another site (a POST that a page elsewhere makes
// with the user's cookies: cross-site request forgery) is refused before
// a sees it, with an error wrapping imagegen.ErrUnauthorized: FirstOf
// then goes on to the next authenticator, such as BearerKeys, which a
// forged request cannot satisfy. c decides what is cross-origin
// (http.CrossOriginProtection: Sec-Fetch-Site, else Origin against
// Host; GET, HEAD and OPTIONS always pass, as do requests that carry
// neither header, which browsers do not send); its trusted origins may
// come from another site.
func SameOriginOnly(a Authenticator, c *http.CrossOriginProtection) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (Principal, error) {
		if err := c.Check(r); err != nil {
			return Principal{}, fmt.Errorf("%w: %w", imagegen.ErrUnauthorized, err)
		}
		return a.Authenticate(r)
	})
}
