package redis

import "context"

// SharedSecret returns the secret stored under name, storing the one
// made by generate if there is none yet, so every process on this Redis
// gets the same secret (for example the key that signs image URLs).
func (s *Store) SharedSecret(ctx context.Context, name string, generate func() []byte) ([]byte, error) {
	key := s.k.tag + ":secret:" + name
	if err := s.rdb.SetNX(ctx, key, generate(), 0).Err(); err != nil {
		return nil, wrapErr("shared secret", err)
	}
	v, err := s.rdb.Get(ctx, key).Bytes()
	return v, wrapErr("shared secret", err)
}
