package memory

import (
	"bytes"
	"context"
	"slices"
)

// SharedSecret returns the secret named name, making it on first use.
func (s *Store) SharedSecret(_ context.Context, name string, generate func() []byte) ([]byte, error) {
	s.lock()
	defer s.mu.Unlock()
	if s.secrets == nil {
		s.secrets = make(map[string][]byte)
	}
	if _, ok := s.secrets[name]; !ok {
		s.secrets[name] = generate()
	}
	return slices.Clone(s.secrets[name]), nil
}

// ReplaceSharedSecret stores next under name if old is stored there.
func (s *Store) ReplaceSharedSecret(_ context.Context, name string, old, next []byte) (bool, error) {
	s.lock()
	defer s.mu.Unlock()
	if cur, ok := s.secrets[name]; !ok || !bytes.Equal(cur, old) {
		return false, nil
	}
	s.secrets[name] = slices.Clone(next)
	return true, nil
}
