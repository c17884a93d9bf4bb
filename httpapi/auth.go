package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
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

// checkPrincipal refuses a Principal without an owner (an Authenticator's
// bug must not put every caller in one account) and gives one without a
// RateKey its owner's limit.
func checkPrincipal(p Principal) (Principal, error) {
	if p.Owner == "" {
		return p, fmt.Errorf("httpapi: the Authenticator returned a Principal without an Owner: %w", imagegen.ErrUnauthorized)
	}
	if p.RateKey == "" {
		p.RateKey = "owner:" + p.Owner
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
	key, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return Principal{}, fmt.Errorf("no bearer token: %w", imagegen.ErrUnauthorized)
	}
	rec, err := b.Service.Authenticate(r.Context(), key)
	if err != nil {
		return Principal{}, err
	}
	return Principal{Owner: rec.Owner, RateKey: "key:" + rec.ID}, nil
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

type principalKey struct{}

// PrincipalFrom returns the caller that the API authenticated, for host
// apps that wrap the handler.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// authenticate refuses a client IP with too many failed authentications
// before looking at its credential, then authenticates the request.
func (h *Handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ip string
		if h.cfg.AuthFailures != nil {
			ip = h.cfg.ClientIP(r)
			if wait, blocked := h.cfg.AuthFailures.Blocked(ip); blocked {
				writeRateLimited(w, wait, "too many failed authentication attempts from this address")
				return
			}
		}
		p, err := h.cfg.Authenticator.Authenticate(r)
		if err != nil {
			if errors.Is(err, imagegen.ErrUnauthorized) && h.cfg.AuthFailures != nil {
				h.cfg.AuthFailures.Failure(ip)
			}
			h.respondErr(w, r, err)
			return
		}
		p, err = checkPrincipal(p)
		if err != nil {
			h.cfg.Logger.ErrorContext(r.Context(), "refusing a request: the Authenticator's answer is unusable", "err", err)
			h.respondErr(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
