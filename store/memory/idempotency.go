package memory

import (
	"container/heap"
	"context"
	"slices"
	"time"

	"github.com/imagegen/imagegen"
)

type idemRecord struct {
	rec     imagegen.IdempotencyRecord
	expires time.Time // when it stops being live (in flight, or finished)
	keep    time.Time // when it goes: an expired in-flight record is kept until then, to be settled
}

func idemKey(owner, key string) string { return owner + "\x00" + key }

// BeginIdempotent records a request in flight, or returns the record
// the key already has, or renews an expired in-flight record that names
// its task, for the caller to settle.
func (s *Store) BeginIdempotent(_ context.Context, owner, key, fingerprint, taskID string, inFlight, ttl time.Duration) (*imagegen.IdempotencyRecord, error) {
	now := s.lock()
	defer s.mu.Unlock()
	k := idemKey(owner, key)
	keep := now.Add(max(ttl, inFlight))
	if r, ok := s.idem[k]; ok && now.Before(r.keep) {
		switch {
		case now.Before(r.expires):
			c := r.rec
			c.Body = slices.Clone(c.Body)
			return &c, nil
		case !r.rec.Done && r.rec.TaskID != "":
			r.expires, r.keep = now.Add(inFlight), keep
			s.setIdem(k, r)
			c := r.rec
			c.Expired = true
			return &c, nil
		}
	}
	s.setIdem(k, idemRecord{rec: imagegen.IdempotencyRecord{Fingerprint: fingerprint, TaskID: taskID}, expires: now.Add(inFlight), keep: keep})
	return nil, nil
}

// FinishIdempotent stores the response of the request in flight with
// this fingerprint; without such a live record it changes nothing.
func (s *Store) FinishIdempotent(_ context.Context, owner, key, fingerprint string, status int, body []byte, ttl time.Duration) error {
	now := s.lock()
	defer s.mu.Unlock()
	k := idemKey(owner, key)
	r, ok := s.inFlight(k, fingerprint, now)
	if !ok {
		return nil
	}
	r.rec.Done, r.rec.Status, r.rec.Body = true, status, slices.Clone(body)
	r.expires = now.Add(ttl)
	r.keep = r.expires
	s.setIdem(k, r)
	return nil
}

// AbandonIdempotent forgets the key if it holds the request in flight
// with this fingerprint.
func (s *Store) AbandonIdempotent(_ context.Context, owner, key, fingerprint string) error {
	now := s.lock()
	defer s.mu.Unlock()
	k := idemKey(owner, key)
	if _, ok := s.inFlight(k, fingerprint, now); ok {
		delete(s.idem, k)
	}
	return nil
}

// inFlight returns the live in-flight record of k with this fingerprint;
// s.mu is held.
func (s *Store) inFlight(k, fingerprint string, now time.Time) (idemRecord, bool) {
	r, ok := s.idem[k]
	if !ok || !now.Before(r.expires) || r.rec.Done || r.rec.Fingerprint != fingerprint {
		return idemRecord{}, false
	}
	return r, true
}

// setIdem stores r and schedules its removal; s.mu is held.
func (s *Store) setIdem(k string, r idemRecord) {
	if s.idem == nil {
		s.idem = make(map[string]idemRecord)
	}
	s.idem[k] = r
	heap.Push(&s.idemExpiring, expiry{at: r.keep, id: k})
}

// sweepIdem removes expired idempotency records; s.mu is held.
func (s *Store) sweepIdem(now time.Time) {
	for len(s.idemExpiring) > 0 && !now.Before(s.idemExpiring[0].at) {
		e := heap.Pop(&s.idemExpiring).(expiry)
		if r, ok := s.idem[e.id]; ok && !now.Before(r.keep) {
			delete(s.idem, e.id)
		}
	}
}
