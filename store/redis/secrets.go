package redis

import "context"

// SharedSecret returns the secret stored under name, storing the one
// made by generate if there is none yet, so every process on this Redis
// gets the same secret (for example the key that signs image URLs).
func (s *Store) SharedSecret(ctx context.Context, name string, generate func() []byte) ([]byte, error) {
	key := s.secretKey(name)
	if err := s.rdb.SetNX(ctx, key, generate(), 0).Err(); err != nil {
		return nil, wrapErr("shared secret", err)
	}
	v, err := s.rdb.Get(ctx, key).Bytes()
	return v, wrapErr("shared secret", err)
}

func (s *Store) secretKey(name string) string { return s.k.tag + ":secret:" + name }

// replaceSecretScript sets KEYS[1] to ARGV[2] if it holds ARGV[1]
// (a missing key holds nothing): 1 if it did, else 0.
//
//	KEYS[1] secret
//	ARGV[1] old value  ARGV[2] new value
var replaceSecretScript = newScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
`)

// ReplaceSharedSecret stores next under name if old is stored there, in
// one script, so that two replacements of the same secret cannot both
// win.
func (s *Store) ReplaceSharedSecret(ctx context.Context, name string, old, next []byte) (bool, error) {
	n, err := runScript(ctx, s.rdb, replaceSecretScript, []string{s.secretKey(name)}, old, next).Int()
	if err != nil {
		return false, wrapErr("replace shared secret", err)
	}
	return n == 1, nil
}
