package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/imagegen/imagegen"
)

// Principal is an authenticated caller.
type Principal struct {
	// Owner is the user whose tasks and credits are used. Required: a
	// Principal without one is refused (401, and an error is logged).
	Owner string
	// RateKey identifies the credential for the per-key rate limit (for
	// API keys, the key's id). Empty means "owner:"+Owner: one limit per
	// user, never one shared by everybody.
	RateKey string
}

// KeyRateKey is the RateKey of a caller authenticated by the API key with
// this record id: the key's own limit. Another front end on the same
// limiter (the console) uses it so that its requests count in the same
// limit as the API's.
func KeyRateKey(keyID string) string { return "key:" + keyID }

// OwnerRateKey is the RateKey of a caller known only as owner: one limit
// per user (what an empty Principal.RateKey means).
func OwnerRateKey(owner string) string { return "owner:" + owner }

// checkPrincipal refuses a Principal without an owner (an Authenticator's
// bug must not put every caller in one account) and gives one without a
// RateKey its owner's limit.
func checkPrincipal(p Principal) (Principal, error) {
	if p.Owner == "" {
		return p, fmt.Errorf("httpapi: the Authenticator returned a Principal without an Owner: %w", imagegen.ErrUnauthorized)
	}
	if p.RateKey == "" {
		p.RateKey = OwnerRateKey(p.Owner)
	}
	return p, nil
}

// Authenticator identifies the caller of a request. It returns an error
// wrapping imagegen.ErrUnauthorized for a missing or bad credential; any
// other error is a server error (500).
type Authenticator interface {
	Authenticate(r *http.Request) (Principal, error)
}

// AuthenticatorFunc adapts a function to Authenticator, for host apps
// that keep their own sessions or tokens.
type AuthenticatorFunc func(r *http.Request) (Principal, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (Principal, error) { return f(r) }

// FirstOf tries each authenticator in turn and answers with the first one
// that does not refuse the request with imagegen.ErrUnauthorized (a
// success, or a server error). When all refuse, the last refusal stands.
func FirstOf(auths ...Authenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (Principal, error) {
		err := fmt.Errorf("no authenticator: %w", imagegen.ErrUnauthorized)
		for _, a := range auths {
			var p Principal
			if p, err = a.Authenticate(r); !errors.Is(err, imagegen.ErrUnauthorized) {
				return p, err
			}
		}
		return Principal{}, err
	})
}

// BearerKeys authenticates "Authorization: Bearer <API_KEY>" against the
// service's hashed keys.
type BearerKeys struct{ Service *imagegen.Service }

// Authenticate implements Authenticator.
func (b BearerKeys) Authenticate(r *http.Request) (Principal, error) {
	key, ok := bearerToken(headerValue(r.Header, authorizationHeader))
	if !ok {
		return Principal{}, fmt.Errorf("no bearer token: %w", imagegen.ErrUnauthorized)
	}
	rec, err := b.Service.Authenticate(r.Context(), key)
	if err != nil {
		return Principal{}, err
	}
	return Principal{Owner: rec.Owner, RateKey: KeyRateKey(rec.ID)}, nil
}

// bearerToken extracts the token of an "Authorization: Bearer" header;
// the scheme is case-insensitive (RFC 9110 §11.1).
func bearerToken(header string) (string, bool) {
	const scheme = "bearer "
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return "", false
	}
	token := strings.TrimSpace(header[len(scheme):])
	return token, token != ""
}

// PrincipalFrom returns the caller that the API authenticated, from the
// context of a request being served by the API's routes.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	if o := observedOf(ctx); o != nil && o.authenticated {
		return o.principal, true
	}
	return Principal{}, false
}

// AuthFailurePrefix starts the limiter key of a client address's failed
// authentications ("authfail:" + the address group), so that a limiter
// shared with other policies keeps them apart. Other sign-in forms (the
// web console's) count under the same keys, so that an address has one
// budget of failures whichever door it knocks on.
const AuthFailurePrefix = "authfail:"

// authenticate authenticates the request first, so that a valid key is
// always served whatever others sent from the same address. Only a failed
// authentication is counted against the client's address (an IPv4
// address or IPv6 /64, see clientAddr): within Config.AuthFailures'
// budget it gets 401, beyond it 429 with Retry-After.
func (h *Handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := h.cfg.Authenticator.Authenticate(r)
		if err == nil {
			if p, err = checkPrincipal(p); err != nil { // the host app's bug, not the client's failure
				h.cfg.Logger.ErrorContext(r.Context(), "refusing a request: the Authenticator's answer is unusable", "err", err)
				h.respondErr(w, r, err)
				return
			}
			o := observedOf(r.Context()) // every route is served through serveObserved
			o.principal, o.authenticated = p, true
			next.ServeHTTP(w, r)
			return
		}
		if errors.Is(err, imagegen.ErrUnauthorized) && h.cfg.AuthFailures != nil {
			res, lerr := h.cfg.AuthFailures.Allow(r.Context(), AuthFailurePrefix+h.cfg.ClientIP(r))
			switch {
			case lerr != nil: // the limiter's backend is down: still a 401
				h.cfg.Logger.WarnContext(r.Context(), "auth failure limiter", "err", lerr)
			case !res.Allowed:
				writeRateLimited(w, res.RetryAfter, "too many failed authentication attempts from this address")
				return
			}
		}
		h.respondErr(w, r, err)
	})
}
