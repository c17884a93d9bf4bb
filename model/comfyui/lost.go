package comfyui

import (
	"context"
	"fmt"
	"strings"
)

// lost stops the prompt a POST /prompt may have queued though the
// adapter never read its answer (provider.ErrMaybeAccepted: a 2xx cut
// short, or the HTTP client's timeout after the request was written; a
// 2xx that is not the documented answer; ctx ended during the call), so
// that it does not take the GPU for nobody while the task is retried
// and queues a prompt again. The prompt is found in GET /queue by the
// prompt_id the adapter chose (servers since 0.3.45 take it) or by this
// generation's client_id in the item's extra_data (every server; the
// generation sends one POST /prompt, so the id is its prompt's alone),
// then taken off the queue or interrupted. err keeps its
// classification, the outcome in its cause.
func (m *Model) lost(ctx context.Context, promptID, clientID string, err error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	outcome, ids, serr := m.stop(cctx, func(id, client string) bool { return id == promptID || client == clientID })
	switch {
	case serr != nil:
		m.cfg.Logger.Warn("comfyui: stopping a prompt whose answer was lost failed", "prompt_id", promptID, "client_id", clientID, "err", serr)
		return withOutcome(err, fmt.Sprintf("prompt %s: stopping it failed: %v", promptID, serr))
	case len(ids) == 0:
		return withOutcome(err, "prompt "+promptID+" not in the queue: not taken, or already ended")
	}
	return withOutcome(err, fmt.Sprintf("prompt %s %s", strings.Join(ids, ", "), outcome))
}
