package console

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
)

// Cookie names. Both are HttpOnly and SameSite=Lax. Where cookies are
// Secure (secureCookies) they carry the prefix "__Host-" and Path=/, as
// the prefix requires; elsewhere (plain http, the default on loopback:
// browsers refuse a __Host- cookie that is not Secure) these names,
// scoped to Config.Prefix.
const (
	sessionCookie = "imagegen_console_session"
	csrfCookie    = "imagegen_console_csrf"
	hostPrefix    = "__Host-"
)

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

// A key sign-in's cookie is token.mac: a random token (32 bytes,
// base64url) and its HMAC, so a forged cookie is refused without a store
// read. The store keeps the session under sessionID(token), a hash: a
// copy of the store opens no session.

// newSessionToken returns a fresh cookie value and the id of its session.
func (c *Console) newSessionToken() (cookie, id string) {
	token := base64.RawURLEncoding.EncodeToString(imagegen.NewSecretKey())
	return token + "." + c.mac("session", token), sessionID(token)
}

// sessionIDOf returns the id of the session a cookie value names, or
// false when the value is not one this console signed.
func (c *Console) sessionIDOf(value string) (string, bool) {
	token, sum, ok := strings.Cut(value, ".")
	if !ok || token == "" || !hmac.Equal([]byte(sum), []byte(c.mac("session", token))) {
		return "", false
	}
	return sessionID(token), true
}

func sessionID(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// secureCookies says whether r's cookies are Secure: r came over TLS,
// or Config.SecureCookies says a proxy in front terminates TLS.
func (c *Console) secureCookies(r *http.Request) bool {
	return r.TLS != nil || c.cfg.SecureCookies
}

// cookieName is the name of cookie name on r: with the __Host- prefix
// where r's cookies are Secure. Only that name is read there, so that a
// cookie set over plain http or by a sibling domain (which cannot carry
// the prefix) is not taken for the console's.
func (c *Console) cookieName(r *http.Request, name string) string {
	if c.secureCookies(r) {
		return hostPrefix + name
	}
	return name
}

// readCookie returns the value of r's cookie name ("" for none).
func (c *Console) readCookie(r *http.Request, name string) string {
	ck, err := r.Cookie(c.cookieName(r, name))
	if err != nil {
		return ""
	}
	return ck.Value
}

func (c *Console) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	ck := &http.Cookie{
		Name:     c.cookieName(r, name),
		Value:    value,
		Path:     c.cfg.Prefix + "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   c.secureCookies(r),
		SameSite: http.SameSiteLaxMode,
	}
	if ck.Secure {
		ck.Path = "/" // __Host-: Secure, Path=/, no Domain
	}
	return ck
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if _, ok, _ := c.identify(r); ok {
		http.Redirect(w, r, c.path("/playground"), http.StatusSeeOther)
		return
	}
	n := flash(r)
	c.render(w, r, http.StatusOK, "signin", page{Title: "Sign in", Message: n.success})
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
	// A session is a store write that lasts SessionTTL: the sign-in
	// counts against the key's rate limit, as the key's API requests
	// do, so that a sign-in loop cannot pile up sessions at page speed.
	switch refusal, err := c.spendRequest(w, r, viewer{User: rec.Owner, RateKey: httpapi.KeyRateKey(rec.ID)}); {
	case err != nil:
		c.serverError(w, r, err)
		return
	case refusal != "":
		c.render(w, r, http.StatusTooManyRequests, "signin", page{Title: "Sign in", Error: "You were not signed in. " + refusal})
		return
	}
	// The session this browser had (a stale tab's, another user's, or
	// one planted in it) ends: a sign-in leaves one session live.
	if err := c.endCookieSession(r); err != nil {
		c.serverError(w, r, err)
		return
	}
	value, id := c.newSessionToken()
	if _, err := c.store.PutSession(r.Context(), imagegen.Session{ID: id, Owner: rec.Owner, KeyID: rec.ID}, c.cfg.SessionTTL); err != nil {
		c.serverError(w, r, err)
		return
	}
	http.SetCookie(w, c.cookie(r, sessionCookie, value, int(c.cfg.SessionTTL/time.Second)))
	// A fresh CSRF cookie: the token of the anonymous form must not carry over.
	http.SetCookie(w, c.cookie(r, csrfCookie, "", -1))
	http.Redirect(w, r, c.path("/playground"), http.StatusSeeOther)
}

// signOut ends a key session in the store, so that a copy of its cookie
// opens nothing in any process, and clears the cookies. For the app's
// login it only clears the console's cookies: the app owns that session.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	if err := c.endCookieSession(r); err != nil {
		c.serverError(w, r, err)
		return
	}
	c.signedOut(w, r, "signedout")
}

// endCookieSession ends the key session that r's session cookie names,
// when the cookie is one this console signed and its session is live,
// whoever's it is and whether or not its key is still live.
func (c *Console) endCookieSession(r *http.Request) error {
	id, ok := c.sessionIDOf(c.readCookie(r, sessionCookie))
	if !ok {
		return nil
	}
	s, err := c.store.Session(r.Context(), id)
	switch {
	case errors.Is(err, imagegen.ErrSessionNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("console: session: %w", err)
	}
	if err := c.store.EndSession(r.Context(), s.Owner, s.ID); err != nil {
		return fmt.Errorf("console: end session: %w", err)
	}
	return nil
}

// signOutEverywhere ends every key session of the signed-in user, in
// every browser and process, this one included.
func (c *Console) signOutEverywhere(w http.ResponseWriter, r *http.Request) {
	v := viewerFrom(r.Context())
	n, err := c.store.EndSessions(r.Context(), v.User)
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	c.log.InfoContext(r.Context(), "console: signed out everywhere", "owner", v.User, "sessions", n)
	c.signedOut(w, r, "signedout-everywhere")
}

// signedOut clears the console's cookies and confirms the sign-out
// (done names the flash notice): on the sign-in page, or, for the app's
// login, on a page that says the app's own session goes on.
func (c *Console) signedOut(w http.ResponseWriter, r *http.Request, done string) {
	http.SetCookie(w, c.cookie(r, sessionCookie, "", -1))
	http.SetCookie(w, c.cookie(r, csrfCookie, "", -1))
	if c.cfg.KeySignIn {
		http.Redirect(w, r, c.path("/signin?done="+done), http.StatusSeeOther)
		return
	}
	c.render(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, viewer{})), http.StatusOK, "message", page{Title: "Signed out",
		Message: "You left the console. Your sign-in to the application goes on: sign out there to end it."})
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
		c.render(w, r, http.StatusUnauthorized, "message", page{Title: "Sign in", Info: "Please sign in to use the console."})
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
