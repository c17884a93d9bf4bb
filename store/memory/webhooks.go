package memory

import (
	"context"
	"sort"
	"time"

	"github.com/imagegen/imagegen"
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

// queueWebhook queues the delivery of a finished task's callback; s.mu
// is held.
func (s *Store) queueWebhook(r *record, now time.Time) {
	if r.task.Request.CallbackURL == "" {
		return
	}
	if s.hooks == nil {
		s.hooks = make(map[string]*hook)
	}
	s.seq++
	s.hooks[r.task.ID] = &hook{due: now, seq: s.seq}
}

// ClaimWebhooks leases up to n due deliveries, the longest due first
// (queue order among those due at the same time).
func (s *Store) ClaimWebhooks(_ context.Context, lease time.Duration, n int) ([]imagegen.WebhookDelivery, error) {
	now := s.lock()
	defer s.mu.Unlock()
	var due []string
	for id, h := range s.hooks {
		if r, ok := s.tasks[id]; !ok || r.task.Request.CallbackURL == "" {
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
		h, t := s.hooks[id], s.tasks[id].task
		h.due = now.Add(lease)
		out = append(out, imagegen.WebhookDelivery{TaskID: id, Owner: t.Owner, URL: t.Request.CallbackURL, Attempts: h.attempts})
	}
	return out, nil
}

// AckWebhook removes a delivery.
func (s *Store) AckWebhook(_ context.Context, taskID string) error {
	s.lock()
	defer s.mu.Unlock()
	delete(s.hooks, taskID)
	return nil
}

// RetryWebhook counts an attempt and reschedules the delivery.
func (s *Store) RetryWebhook(_ context.Context, taskID string, delay time.Duration) error {
	now := s.lock()
	defer s.mu.Unlock()
	if h, ok := s.hooks[taskID]; ok {
		h.attempts++
		h.due = now.Add(delay)
	}
	return nil
}
