package memory

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
)

// PutSession stores a console session, live for ttl.
func (s *Store) PutSession(_ context.Context, sess imagegen.Session, ttl time.Duration) (imagegen.Session, error) {
	if sess.ID == "" || sess.Owner == "" || ttl <= 0 {
		return imagegen.Session{}, fmt.Errorf("memory store: a session needs an id, an owner and a positive ttl: %w", imagegen.ErrInvalidParams)
	}
	now := s.lock()
	defer s.mu.Unlock()
	if s.sessions == nil {
		s.sessions = make(map[string]imagegen.Session)
		s.ownerSessions = make(map[string]map[string]struct{})
	}
	if old, ok := s.sessions[sess.ID]; ok {
		s.dropSession(old)
	}
	sess.CreatedAt, sess.ExpiresAt = now.UTC(), now.Add(ttl).UTC()
	s.sessions[sess.ID] = sess
	if s.ownerSessions[sess.Owner] == nil {
		s.ownerSessions[sess.Owner] = make(map[string]struct{})
	}
	s.ownerSessions[sess.Owner][sess.ID] = struct{}{}
	heap.Push(&s.sessionsExpiring, expiry{at: sess.ExpiresAt, id: sess.ID})
	s.boundSessions(sess)
	return sess, nil
}

// boundSessions ends those of sess's owner's other sessions that expire
// first while the owner has more than imagegen.MaxSessionsPerOwner;
// s.mu is held.
func (s *Store) boundSessions(sess imagegen.Session) {
	ids := s.ownerSessions[sess.Owner]
	if len(ids) <= imagegen.MaxSessionsPerOwner {
		return
	}
	others := make([]imagegen.Session, 0, len(ids)-1)
	for id := range ids {
		if id != sess.ID {
			others = append(others, s.sessions[id])
		}
	}
	slices.SortFunc(others, func(a, b imagegen.Session) int {
		return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), strings.Compare(a.ID, b.ID))
	})
	for _, old := range others[:len(ids)-imagegen.MaxSessionsPerOwner] {
		s.dropSession(old)
	}
}

// Session returns the live session with the id.
func (s *Store) Session(_ context.Context, id string) (*imagegen.Session, error) {
	s.lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		return nil, imagegen.ErrSessionNotFound
	}
	return &sess, nil
}

// EndSession ends the owner's session id.
func (s *Store) EndSession(_ context.Context, owner, id string) error {
	s.lock()
	defer s.mu.Unlock()
	if sess, ok := s.sessions[id]; ok && sess.Owner == owner {
		s.dropSession(sess)
	}
	return nil
}

// EndSessions ends every session of the owner.
func (s *Store) EndSessions(_ context.Context, owner string) (int, error) {
	s.lock()
	defer s.mu.Unlock()
	n := 0
	for id := range s.ownerSessions[owner] {
		s.dropSession(s.sessions[id])
		n++
	}
	return n, nil
}

// dropSession forgets sess; s.mu is held. Its entry in the expiry queue
// stays and is skipped when it comes up.
func (s *Store) dropSession(sess imagegen.Session) {
	delete(s.sessions, sess.ID)
	ids := s.ownerSessions[sess.Owner]
	delete(ids, sess.ID)
	if len(ids) == 0 {
		delete(s.ownerSessions, sess.Owner)
	}
}

// sweepSessions removes expired sessions; s.mu is held.
func (s *Store) sweepSessions(now time.Time) {
	for len(s.sessionsExpiring) > 0 && !now.Before(s.sessionsExpiring[0].at) {
		e := heap.Pop(&s.sessionsExpiring).(expiry)
		if sess, ok := s.sessions[e.id]; ok && !now.Before(sess.ExpiresAt) {
			s.dropSession(sess)
		}
	}
}
