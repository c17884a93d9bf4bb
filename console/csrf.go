package console

import (
	"crypto/hmac"
	"encoding/base64"
	"net/http"

	"github.com/imagegen/imagegen"
)

// csrfToken returns the token that r's forms must carry: the HMAC of the
// random CSRF cookie and the signed-in user (so a token is worthless in
// another browser or for another user). It sets the cookie when r has
// none.
func (c *Console) csrfToken(w http.ResponseWriter, r *http.Request, user string) string {
	nonce := c.readCookie(r, csrfCookie)
	if len(nonce) < 20 {
		nonce = base64.RawURLEncoding.EncodeToString(imagegen.NewSecretKey())
		ck := c.cookie(r, csrfCookie, nonce, 0)
		http.SetCookie(w, ck)
		r.AddCookie(&http.Cookie{Name: ck.Name, Value: nonce}) // later tokens of this request agree
	}
	return c.mac("csrf", nonce, user)
}

// csrf refuses (403) a form whose token does not match its cookie and
// the signed-in user. It runs before the user is looked up for the
// handler (except behind c.operator), so it identifies the user itself
// unless a gate already did.
func (c *Console) csrf(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			c.errorPage(w, r, http.StatusBadRequest, "Bad request", "The form could not be read.")
			return
		}
		v, known := knownViewer(r.Context())
		if !known {
			var err error
			if v, _, err = c.identify(r); err != nil {
				c.serverError(w, r, err)
				return
			}
		}
		nonce := c.readCookie(r, csrfCookie)
		sent := r.PostForm.Get("csrf")
		if nonce == "" || sent == "" || !hmac.Equal([]byte(sent), []byte(c.mac("csrf", nonce, v.User))) {
			c.errorPage(w, r, http.StatusForbidden, "Form expired",
				"This form was not accepted (its security token is missing or stale). Reload the page and try again.")
			return
		}
		next(w, r)
	}
}
