package memory

import (
	"context"
	"sort"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

var (
	_ imagegen.WebhookStore = (*Store)(nil)
	_ imagegen.SecretStore  = (*Store)(nil)
)

type hook struct {
	due      time.Time
	attempts int
	seq      uint64 // queue order among deliveries due at the same time
}

// queueWebhook queues the delivery of event e of the task, if its
// callback asks for it; s.mu is held.
func (s *Store) queueWebhook(r task, e imagegen.CallbackEvent, now time.Time) {
	if r.callbackURL() == "" || !imagegen.Wants(r.events(), e) {
		return
	}
	if s.hooks == nil {
		s.hooks = make(map[string]*hook)
	}
	s.seq++
	s.hooks[storekit.WebhookID(r.id(), e)] = &hook{due: now, seq: s.seq}
}

// ClaimWebhooks leases up to n due deliveries, the longest due first
// (queue order among those due at the same time). Each is handed out
// under a claimed ID (storekit.ClaimedWebhookID) ending in its lease end
// in microseconds.
func (s *Store) ClaimWebhooks(_ context.Context, lease time.Duration, n int) ([]imagegen.WebhookDelivery, error) {
	now := s.lock()
	defer s.mu.Unlock()
	var due []string
	for id, h := range s.hooks {
		taskID, _ := storekit.ParseWebhookID(id)
		if r, ok := s.find(taskID); !ok || r.callbackURL() == "" {
			delete(s.hooks, id) // the task expired: nothing to send
			continue
		}
		if !now.Before(h.due) {
			due = append(due, id)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		a, b := s.hooks[due[i]], s.hooks[due[j]]
		if !a.due.Equal(b.due) {
			return a.due.Before(b.due)
		}
		return a.seq < b.seq
	})
	out := make([]imagegen.WebhookDelivery, 0, min(n, len(due)))
	for _, id := range due[:min(n, len(due))] {
		taskID, event := storekit.ParseWebhookID(id)
		h := s.hooks[id]
		r, _ := s.find(taskID) // the loop above kept only the tasks held
		h.due = now.Add(lease)
		out = append(out, imagegen.WebhookDelivery{
			ID: storekit.ClaimedWebhookID(id, h.due.UnixMicro()), TaskID: taskID, Event: event, Owner: r.owner(), URL: r.callbackURL(), Attempts: h.attempts,
		})
	}
	return out, nil
}

// AckWebhook removes a delivery; with a claimed ID, only while that
// claim still leases it.
func (s *Store) AckWebhook(_ context.Context, id string) error {
	s.lock()
	defer s.mu.Unlock()
	if id, _, ok := s.leasedHook(id); ok {
		delete(s.hooks, id)
	}
	return nil
}

// RetryWebhook counts an attempt and reschedules the delivery.
func (s *Store) RetryWebhook(_ context.Context, id string, delay time.Duration) error {
	s.reschedule(id, delay, 1)
	return nil
}

// PostponeWebhook makes the delivery due after delay, counting no attempt.
func (s *Store) PostponeWebhook(_ context.Context, id string, delay time.Duration) error {
	s.reschedule(id, delay, 0)
	return nil
}

func (s *Store) reschedule(id string, delay time.Duration, attempts int) {
	now := s.lock()
	defer s.mu.Unlock()
	if _, h, ok := s.leasedHook(id); ok {
		h.attempts += attempts
		h.due = now.Add(delay)
	}
}

// leasedHook finds the delivery that id names: for a plain
// storekit.WebhookID, the one queued under it; for a claimed ID, the
// same, but only while that claim still leases it (its due time is the
// claim's lease end). s.mu is held.
func (s *Store) leasedHook(id string) (string, *hook, bool) {
	id, leaseEnd, claimed := storekit.ParseClaimedWebhookID(id)
	h, ok := s.hooks[id]
	if !ok || (claimed && h.due.UnixMicro() != leaseEnd) {
		return id, nil, false
	}
	return id, h, true
}
