package comfyui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// cancelTimeout bounds the calls made after ctx ended.
const cancelTimeout = 10 * time.Second

// queueState is the answer of GET /queue: each item is [number,
// prompt_id, prompt, extra_data, outputs_to_execute].
type queueState struct {
	Running [][]json.RawMessage `json:"queue_running"`
	Pending [][]json.RawMessage `json:"queue_pending"`
}

// holds reports whether items hold the prompt id.
func holds(items [][]json.RawMessage, id string) bool {
	for _, it := range items {
		var pid string
		if len(it) > 1 && json.Unmarshal(it[1], &pid) == nil && pid == id {
			return true
		}
	}
	return false
}

// abandon stops a prompt nobody will wait for (ctx ended): it is taken
// off the queue when pending, or interrupted when it is the one running
// (POST /interrupt names it, so a server that knows the field stops only
// it). err, why the generation stopped, is returned as a retryable
// error with the outcome in its cause.
func (m *Model) abandon(ctx context.Context, id string, err error) error {
	out := provider.Unfinished(Provider, "prompt "+id+" unfinished", err)
	var me *imagegen.ModelError
	if errors.As(err, &me) && me.Message == provider.MsgTimeout {
		out.Message = provider.MsgTimeout
	}
	out.Err = fmt.Errorf("%w (%s)", out.Err, m.stopDetached(ctx, id))
	return out
}

// dropped stops a prompt the generation no longer follows for another
// reason than ctx (its history could not be read), so that it does not
// take the GPU while the task is retried: err, a *imagegen.ModelError,
// is returned as it is classified, with the outcome in its cause.
func (m *Model) dropped(ctx context.Context, id string, err error) error {
	var me *imagegen.ModelError
	if !errors.As(err, &me) {
		me = provider.BadAnswer(Provider, true, err)
	}
	out := *me
	out.Err = fmt.Errorf("%w (prompt %s %s)", me.Err, id, m.stopDetached(ctx, id))
	return &out
}

// stopDetached is stop on a context of its own, bounded by
// cancelTimeout (ctx may have ended), and says what became of the prompt.
func (m *Model) stopDetached(ctx context.Context, id string) string {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	outcome, cerr := m.stop(cctx, id)
	if cerr != nil {
		m.cfg.Logger.Warn("comfyui: stopping an abandoned prompt failed", "prompt_id", id, "err", cerr)
		return fmt.Sprintf("stopping it failed: %v", cerr)
	}
	return outcome
}

// stop takes the prompt off the queue or interrupts it, and says which.
func (m *Model) stop(ctx context.Context, id string) (string, error) {
	resp, err := m.client.DoOnce(ctx, provider.Get(m.client.URL("/queue"), m.header()))
	if err != nil {
		return "", err
	}
	var q queueState
	if err := provider.DecodeJSON(Provider, resp, &q); err != nil {
		return "", err
	}
	switch {
	case holds(q.Pending, id):
		return "taken off the queue", m.dequeue(ctx, id)
	case holds(q.Running, id):
		post, err := provider.PostJSON(m.client.URL("/interrupt"), map[string]string{"prompt_id": id}, m.header())
		if err != nil {
			return "", err
		}
		_, err = m.client.DoOnce(ctx, post)
		return "interrupted", err
	}
	return "already ended", nil
}

// dequeue deletes a pending prompt from the queue (POST /queue).
func (m *Model) dequeue(ctx context.Context, id string) error {
	post, err := provider.PostJSON(m.client.URL("/queue"), map[string][]string{"delete": {id}}, m.header())
	if err != nil {
		return err
	}
	_, err = m.client.DoOnce(ctx, post)
	return err
}
