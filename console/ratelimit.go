package console

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/imagegen/imagegen/httpapi"
)

// spendRequest counts one request of the signed-in user's against
// Config.Limiter, under the key the API counts them (shared with their
// API use). When the budget is spent it sets Retry-After and returns the
// message to show; an error is the limiter's. Without a Limiter every
// request passes.
func (c *Console) spendRequest(w http.ResponseWriter, r *http.Request, v viewer) (refusal string, err error) {
	if c.cfg.Limiter == nil {
		return "", nil
	}
	res, err := c.cfg.Limiter.Allow(r.Context(), v.RateKey)
	if err != nil {
		return "", fmt.Errorf("rate limit: %w", err)
	}
	if res.Allowed {
		return "", nil
	}
	wait := httpapi.RetryAfterSeconds(res.RetryAfter)
	w.Header().Set("Retry-After", strconv.FormatInt(wait, 10))
	return fmt.Sprintf("Too many requests: the limit is %d a %s, shared with your API use. Try again in %ds.", res.Limit, res.Window, wait), nil
}

// spendKeyCreation counts the creation of a key against the signed-in
// caller's budget (spendRequest) and against the user's own
// (httpapi.OwnerRateKey), which all their keys share. Every new key
// brings a budget of its own: counted only against the key that makes
// it, a user who signed in with each new key could make keys, and with
// them requests, without bound. A caller whose budget is the user's
// already (the host app's session) spends once.
func (c *Console) spendKeyCreation(w http.ResponseWriter, r *http.Request, v viewer) (refusal string, err error) {
	if refusal, err = c.spendRequest(w, r, v); refusal != "" || err != nil {
		return refusal, err
	}
	if owner := httpapi.OwnerRateKey(v.User); owner != v.RateKey {
		return c.spendRequest(w, r, viewer{User: v.User, RateKey: owner})
	}
	return "", nil
}
