package comfyui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// pick is the ids of the items that mine picks, given each item's
// prompt_id and the client_id of its extra_data ("" when it has none).
func pick(items [][]json.RawMessage, mine func(id, clientID string) bool) []string {
	var ids []string
	for _, it := range items {
		var id string
		if len(it) < 2 || json.Unmarshal(it[1], &id) != nil || id == "" {
			continue
		}
		var extra struct {
			ClientID string `json:"client_id"`
		}
		if len(it) > 3 {
			_ = json.Unmarshal(it[3], &extra)
		}
		if mine(id, extra.ClientID) {
			ids = append(ids, id)
		}
	}
	return ids
}

// isID picks the prompt id.
func isID(id string) func(string, string) bool {
	return func(pid, _ string) bool { return pid == id }
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
	return withOutcome(err, "prompt "+id+" "+m.stopDetached(ctx, id))
}

// withOutcome is err, a *imagegen.ModelError (a bad answer otherwise),
// as it is classified, with what became of a prompt added to its cause.
func withOutcome(err error, outcome string) error {
	var me *imagegen.ModelError
	if !errors.As(err, &me) {
		me = provider.BadAnswer(Provider, true, err)
	}
	out := *me
	out.Err = fmt.Errorf("%w (%s)", me.Err, outcome)
	return &out
}

// stopDetached is stop on a context of its own, bounded by
// cancelTimeout (ctx may have ended), and says what became of the prompt.
func (m *Model) stopDetached(ctx context.Context, id string) string {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	outcome, _, cerr := m.stop(cctx, isID(id))
	if cerr != nil {
		m.cfg.Logger.Warn("comfyui: stopping an abandoned prompt failed", "prompt_id", id, "err", cerr)
		return fmt.Sprintf("stopping it failed: %v", cerr)
	}
	return outcome
}

// stop takes the prompts mine picks in GET /queue off the queue, or
// interrupts the one running, says which, and returns their ids (none
// when the queue holds none: "already ended").
func (m *Model) stop(ctx context.Context, mine func(id, clientID string) bool) (string, []string, error) {
	resp, err := m.client.DoOnce(ctx, provider.Get(m.client.URL("/queue"), m.header()))
	if err != nil {
		return "", nil, err
	}
	var q queueState
	if err := provider.DecodeJSON(Provider, resp, &q); err != nil {
		return "", nil, err
	}
	pending, running := pick(q.Pending, mine), pick(q.Running, mine)
	var done []string
	if len(pending) > 0 {
		if err := m.dequeue(ctx, pending...); err != nil {
			return "", pending, err
		}
		done = append(done, "taken off the queue")
	}
	for _, id := range running {
		post, err := provider.PostJSON(m.client.URL("/interrupt"), map[string]string{"prompt_id": id}, m.header())
		if err != nil {
			return "", running, err
		}
		if _, err := m.client.DoOnce(ctx, post); err != nil {
			return "", running, err
		}
		done = append(done, "interrupted")
	}
	if len(done) == 0 {
		return "already ended", nil, nil
	}
	return strings.Join(done, ", "), append(pending, running...), nil
}

// dequeue deletes pending prompts from the queue (POST /queue).
func (m *Model) dequeue(ctx context.Context, ids ...string) error {
	post, err := provider.PostJSON(m.client.URL("/queue"), map[string][]string{"delete": ids}, m.header())
	if err != nil {
		return err
	}
	_, err = m.client.DoOnce(ctx, post)
	return err
}
