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
