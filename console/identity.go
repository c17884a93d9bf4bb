package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
)

// viewer is the signed-in user of a request.
type viewer struct {
	User     string
	Operator bool
	// RateKey is the caller's key in the API's rate limit, as the API
	// names it: httpapi.KeyRateKey for a key session, else
	// httpapi.OwnerRateKey(User).
	RateKey string
	// KeyID is the API key a key session was opened with ("" otherwise).
	KeyID string
	// SessionID is the store's id of a key session ("" otherwise).
	SessionID string
}

type viewerKey struct{}

func viewerFrom(ctx context.Context) viewer {
	v, _ := ctx.Value(viewerKey{}).(viewer)
	return v
}

// knownViewer returns the viewer a gate already put in ctx, if any.
func knownViewer(ctx context.Context) (viewer, bool) {
	v, ok := ctx.Value(viewerKey{}).(viewer)
	return v, ok
}

// identify returns the signed-in user of r, or ok=false for nobody. A key
// session is tried first, then the host app's Identify.
func (c *Console) identify(r *http.Request) (v viewer, ok bool, err error) {
	if c.cfg.KeySignIn {
		if v, ok, err = c.keySession(r); ok || err != nil {
			return v, ok, err
		}
	}
	if c.cfg.Identify == nil {
		return viewer{}, false, nil
	}
	user, operator, err := c.cfg.Identify(r)
	switch {
	case errors.Is(err, imagegen.ErrUnauthorized):
		return viewer{}, false, nil
	case err != nil:
		return viewer{}, false, fmt.Errorf("console: identify: %w", err)
	case user == "":
		return viewer{}, false, nil
	}
	return viewer{User: user, Operator: operator, RateKey: httpapi.OwnerRateKey(user)}, true, nil
}

// keySession returns the user of r's session cookie when it is genuine,
// its session is live in the store (not signed out, not expired), and
// its key is still live (revoking the key ends its sessions).
func (c *Console) keySession(r *http.Request) (viewer, bool, error) {
	id, ok := c.sessionIDOf(c.readCookie(r, sessionCookie))
	if !ok {
		return viewer{}, false, nil
	}
	s, err := c.store.Session(r.Context(), id)
	if errors.Is(err, imagegen.ErrSessionNotFound) {
		return viewer{}, false, nil
	}
	if err != nil {
		return viewer{}, false, fmt.Errorf("console: session: %w", err)
	}
	keys, err := c.svc.Keys(r.Context(), s.Owner)
	if err != nil {
		return viewer{}, false, fmt.Errorf("console: session key: %w", err)
	}
	for _, k := range keys {
		if k.ID == s.KeyID && !k.Revoked {
			return viewer{User: s.Owner, Operator: c.isOperatorOwner(s.Owner), RateKey: httpapi.KeyRateKey(k.ID), KeyID: k.ID, SessionID: s.ID}, true, nil
		}
	}
	return viewer{}, false, nil // the key was revoked: the session is over
}

// user lets signed-in users through (with the viewer in the context)
// and sends everybody else to sign in. A read (GET) counts against the
// session's read budget first.
func (c *Console) user(next http.HandlerFunc) http.HandlerFunc {
	return c.gate(next, false)
}

// operator lets operators through and answers 404 to everybody else,
// signed in or not, so that the pages' existence is not revealed.
func (c *Console) operator(next http.HandlerFunc) http.HandlerFunc {
	return c.gate(next, true)
}

func (c *Console) gate(next http.HandlerFunc, operatorsOnly bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok, err := c.identify(r)
		switch {
		case err != nil:
			c.serverError(w, r, err)
			return
		case operatorsOnly && !(ok && v.Operator):
			c.notFound(w, r)
			return
		case !ok:
			c.needSignIn(w, r)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), viewerKey{}, v))
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && c.overReadBudget(w, r, v) {
			return
		}
		next(w, r)
	}
}

// needSignIn answers a request from nobody: the sign-in page (key
// sign-in), else 401 with a page saying to sign in through the app.
func (c *Console) needSignIn(w http.ResponseWriter, r *http.Request) {
	if isAPIPath(c, r) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "not signed in"})
		return
	}
	if r.Method == http.MethodGet && c.cfg.KeySignIn {
		http.Redirect(w, r, c.path("/signin"), http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusUnauthorized, "message", page{Title: "Sign in", Info: "Please sign in to use the console."})
}
