package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
)

// Cookie names. Both are HttpOnly, SameSite=Lax, scoped to the prefix.
const (
	sessionCookie = "imagegen_console_session"
	csrfCookie    = "imagegen_console_csrf"
)

// session is what a key sign-in's cookie says: owner, key id, expiry.
type session struct {
	owner   string
	keyID   string
	expires time.Time
}

// mac returns the HMAC-SHA-256 of the parts under purpose, base64url.
func (c *Console) mac(purpose string, parts ...string) string {
	m := hmac.New(sha256.New, c.cfg.Secret)
	m.Write([]byte(purpose))
	for _, p := range parts {
		m.Write([]byte{0})
		m.Write([]byte(p))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sealSession encodes s as base64url(owner).keyID.expiry.mac.
func (c *Console) sealSession(s session) string {
	owner := base64.RawURLEncoding.EncodeToString([]byte(s.owner))
	exp := strconv.FormatInt(s.expires.Unix(), 10)
	return owner + "." + s.keyID + "." + exp + "." + c.mac("session", owner, s.keyID, exp)
}

// openSession checks a cookie value's signature and expiry.
func (c *Console) openSession(value string) (session, bool) {
	parts := strings.Split(value, ".")
	if len(parts) != 4 {
		return session{}, false
	}
	if !hmac.Equal([]byte(parts[3]), []byte(c.mac("session", parts[0], parts[1], parts[2]))) {
		return session{}, false
	}
	owner, err := base64.RawURLEncoding.DecodeString(parts[0])
	exp, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || err2 != nil || len(owner) == 0 {
		return session{}, false
	}
	expires := time.Unix(exp, 0)
	if !c.cfg.Clock.Now().Before(expires) {
		return session{}, false
	}
	return session{owner: string(owner), keyID: parts[1], expires: expires}, true
}

func (c *Console) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     c.cfg.Prefix + "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   r.TLS != nil || c.cfg.SecureCookies,
		SameSite: http.SameSiteLaxMode,
	}
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if _, ok, _ := c.identify(r); ok {
		http.Redirect(w, r, c.path("/playground"), http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "signin", page{Title: "Sign in"})
}

// signIn opens a session for the owner of the API key in the form.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimSpace(r.PostFormValue("key"))
	rec, err := c.svc.Authenticate(r.Context(), key)
	switch {
	case errors.Is(err, imagegen.ErrUnauthorized):
		if c.tooManyFailures(w, r) {
			return
		}
		c.render(w, r, http.StatusUnauthorized, "signin", page{Title: "Sign in", Error: "That API key was not accepted."})
		return
	case err != nil:
		c.serverError(w, r, err)
		return
	}
	s := session{owner: rec.Owner, keyID: rec.ID, expires: c.cfg.Clock.Now().Add(c.cfg.SessionTTL)}
	http.SetCookie(w, c.cookie(r, sessionCookie, c.sealSession(s), int(c.cfg.SessionTTL/time.Second)))
	// A fresh CSRF cookie: the token of the anonymous form must not carry over.
	http.SetCookie(w, c.cookie(r, csrfCookie, "", -1))
	http.Redirect(w, r, c.path("/playground"), http.StatusSeeOther)
}

// signOut ends a key session (and, for the app's login, only says so:
// the app owns that session).
func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, c.cookie(r, sessionCookie, "", -1))
	http.SetCookie(w, c.cookie(r, csrfCookie, "", -1))
	if c.cfg.KeySignIn {
		http.Redirect(w, r, c.path("/signin"), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, c.path("/"), http.StatusSeeOther)
}

// home sends signed-in users to the playground and shows everybody else
// the sign-in page.
func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	_, ok, err := c.identify(r)
	switch {
	case err != nil:
		c.serverError(w, r, err)
	case ok:
		http.Redirect(w, r, c.path("/playground"), http.StatusSeeOther)
	case c.cfg.KeySignIn:
		c.render(w, r, http.StatusOK, "signin", page{Title: "Sign in"})
	default:
		c.render(w, r, http.StatusUnauthorized, "message", page{Title: "Sign in", Message: "Please sign in to use the console."})
	}
}

// tooManyFailures counts a failed sign-in against the client's address
// and, beyond the budget of Config.AuthFailures, answers 429.
func (c *Console) tooManyFailures(w http.ResponseWriter, r *http.Request) bool {
	if c.cfg.AuthFailures == nil {
		return false
	}
	res, err := c.cfg.AuthFailures.Allow(r.Context(), httpapi.AuthFailurePrefix+c.cfg.ClientIP(r))
	if err != nil { // the limiter's backend is down: still just a refusal
		c.log.WarnContext(r.Context(), "console: sign-in failure limiter", "err", err)
		return false
	}
	if res.Allowed {
		return false
	}
	w.Header().Set("Retry-After", strconv.FormatInt(httpapi.RetryAfterSeconds(res.RetryAfter), 10))
	c.render(w, r, http.StatusTooManyRequests, "signin", page{Title: "Sign in", Error: "Too many failed sign-ins from your address. Wait a minute and try again."})
	return true
}
