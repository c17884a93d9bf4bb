package memory

import (
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
