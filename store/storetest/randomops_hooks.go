package storetest

import (
	"fmt"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// This file holds RandomOperationsAgreeWithModel's webhook deliveries.

// event queues t's delivery of e, due now, if t's callback wants it.
func (m *refModel) event(t *rmTask, e imagegen.CallbackEvent) {
	if t.url == "" || !imagegen.Wants(t.events, e) {
		return
	}
	m.hooks[storekit.WebhookID(t.id, e)] = &rmHook{taskID: t.id, owner: t.owner, url: t.url, event: e, due: m.now}
}

// opClaimHooks claims up to n due deliveries: all of them when there
// are n or fewer, else n of those due longest; each is leased.
func (m *refModel) opClaimHooks() {
	n, lease := 1+m.rng.IntN(4), m.claimLease()
	var due []string
	for id, h := range m.hooks {
		if h.due <= m.now {
			due = append(due, id)
		}
	}
	m.lastOp = fmt.Sprintf("claim %d webhooks (lease %v) of %d due", n, lease, len(due))
	got, err := m.s.ClaimWebhooks(ctx, lease, n)
	if err != nil {
		m.fatalf("claim webhooks: %v", err)
	}
	m.note(fmt.Sprintf("took %d", len(got)))
	if len(got) > n || (!m.h.Sharded && len(got) != min(n, len(due))) {
		m.fatalf("claimed %d deliveries, want %d of %d due", len(got), min(n, len(due)), len(due))
	}
	taken := map[string]bool{}
	var latest time.Duration
	for _, d := range got {
		id, _, _ := storekit.ParseClaimedWebhookID(d.ID)
		h := m.hooks[id]
		switch {
		case h == nil:
			m.fatalf("claimed delivery %s (%+v), which the model does not have", id, d)
		case h.due > m.now:
			m.fatalf("claimed delivery %s, due in %v", id, h.due-m.now)
		case taken[id]:
			m.fatalf("claimed delivery %s twice", id)
		case d.TaskID != h.taskID || d.Event != h.event || d.Owner != h.owner || d.URL != h.url || d.Attempts != h.attempts:
			m.fatalf("claimed %+v, model %+v", d, *h)
		}
		taken[id] = true
		latest = max(latest, h.due)
	}
	if !m.h.Sharded {
		for _, id := range due {
			if !taken[id] && m.hooks[id].due < latest {
				m.fatalf("delivery %s, due %v before one claimed, was left", id, latest-m.hooks[id].due)
			}
		}
	}
	for _, d := range got {
		id, _, _ := storekit.ParseClaimedWebhookID(d.ID)
		m.hooks[id].due = m.now + lease
		m.claims = append(m.claims, rmClaim{id: d.ID, hook: id, leaseEnd: m.now + lease})
	}
}

// opHookOutcome acks, retries or postpones a delivery under an ID a
// claim handed out (acting only while that claim's lease end is still
// the delivery's due time) or, now and then, under its plain WebhookID
// (acting however it stands).
func (m *refModel) opHookOutcome() {
	if len(m.claims) == 0 {
		return
	}
	c := m.claims[len(m.claims)-1-m.rng.IntN(min(len(m.claims), 6))]
	h := m.hooks[c.hook]
	id, acts := c.id, h != nil && h.due == c.leaseEnd
	if m.rng.IntN(5) == 0 {
		id, acts = c.hook, h != nil
	}
	delay := time.Duration(m.rng.IntN(4)) * time.Second
	var err error
	switch m.rng.IntN(3) {
	case 0:
		m.lastOp = fmt.Sprintf("ack webhook %s (acts %v)", id, acts)
		if err = m.s.AckWebhook(ctx, id); acts {
			delete(m.hooks, c.hook)
		}
	case 1:
		m.lastOp = fmt.Sprintf("retry webhook %s after %v (acts %v)", id, delay, acts)
		if err = m.s.RetryWebhook(ctx, id, delay); acts {
			h.attempts++
			h.due = m.now + delay
		}
	case 2:
		m.lastOp = fmt.Sprintf("postpone webhook %s by %v (acts %v)", id, delay, acts)
		if err = m.s.PostponeWebhook(ctx, id, delay); acts {
			h.due = m.now + delay
		}
	}
	m.note(fmt.Sprintf("acts %v", acts))
	if err != nil {
		m.fatalf("webhook outcome: %v", err)
	}
}

// drain cancels every unfinished task of the seed, so that the next
// seed starts on an empty queue.
func (m *refModel) drain() {
	m.lastOp = "drain"
	for _, t := range m.tasksWhere(func(t *rmTask) bool { return !t.status.Terminal() }) {
		refund, err := m.s.CancelTask(ctx, t.owner, t.id, imagegen.CancelParams{})
		if err != nil {
			m.fatalf("cancel %s at the end: %v", t.id, err)
		}
		if want := m.finishFailed(t, imagegen.CodeCancelled); refund != want {
			m.fatalf("cancel of %s at the end refunded %d, want %d", t.id, refund, want)
		}
	}
	// A plain WebhookID acks a delivery however it stands.
	for id := range m.hooks {
		if err := m.s.AckWebhook(ctx, id); err != nil {
			m.fatalf("ack %s at the end: %v", id, err)
		}
		delete(m.hooks, id)
	}
	if got, err := m.s.ClaimWebhooks(ctx, lease, 10); err != nil || len(got) != 0 {
		m.fatalf("deliveries left once all were acked: %+v, %v", got, err)
	}
}
