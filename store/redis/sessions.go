package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
)

// putSessionScript stores a console session with its TTL, and indexes
// it under its owner (the index drops what has expired, and lives as
// long as its longest session). Past ARGV[6] sessions of the owner, it
// ends those of the others that expire first (the index's lowest
// scores; the session keys share the store's tag).
//
//	KEYS[1] session:<id>  KEYS[2] sessions:<owner>
//	ARGV[1] now  ARGV[2] ttl (ms)  ARGV[3] id  ARGV[4] owner  ARGV[5] key id
//	ARGV[6] the most sessions an owner keeps
//
// Returns the time it was stored (ms).
var putSessionScript = newScript(`
local now = now_ms()
local ttl = tonumber(ARGV[2])
-- The owner's index first: one of another kind (written by something
-- other than the store) fails the script before the session is live,
-- where a session written first would be live but out of the reach of
-- EndSessions.
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[3])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'owner', ARGV[4], 'key', ARGV[5], 'created', now, 'expires', now + ttl)
redis.call('PEXPIRE', KEYS[1], ttl)
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[6])
if over > 0 then
  local prefix = string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[3])
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, over)) do -- one more: this session may be among them
    if over == 0 then break end
    if id ~= ARGV[3] then
      redis.call('ZREM', KEYS[2], id)
      redis.call('DEL', prefix .. id)
      over = over - 1
    end
  end
end
return now
`)

// PutSession stores a console session, live for ttl.
func (s *Store) PutSession(ctx context.Context, sess imagegen.Session, ttl time.Duration) (imagegen.Session, error) {
	if sess.ID == "" || sess.Owner == "" || ms(ttl) <= 0 {
		return imagegen.Session{}, fmt.Errorf("%s: a session needs an id, an owner and a ttl of at least 1ms: %w", storeName, imagegen.ErrInvalidParams)
	}
	now, err := putSessionScript.Run(ctx, s.rdb, []string{s.k.session(sess.ID), s.k.ownerSessions(sess.Owner)},
		s.nowArg(), ms(ttl), sess.ID, sess.Owner, sess.KeyID, imagegen.MaxSessionsPerOwner).Int64()
	if err != nil {
		return imagegen.Session{}, wrapErr("put session", err)
	}
	sess.CreatedAt = time.UnixMilli(now).UTC()
	sess.ExpiresAt = time.UnixMilli(now + ms(ttl)).UTC()
	return sess, nil
}

// Session returns the live session with the id.
func (s *Store) Session(ctx context.Context, id string) (*imagegen.Session, error) {
	f, err := s.rdb.HMGet(ctx, s.k.session(id), "owner", "key", "created", "expires").Result()
	if err != nil {
		return nil, wrapErr("session", err)
	}
	str := func(i int) string { v, _ := f[i].(string); return v }
	created, _ := strconv.ParseInt(str(2), 10, 64)
	expires, _ := strconv.ParseInt(str(3), 10, 64)
	if str(0) == "" || s.expired(expires) {
		return nil, imagegen.ErrSessionNotFound
	}
	return &imagegen.Session{
		ID: id, Owner: str(0), KeyID: str(1),
		CreatedAt: time.UnixMilli(created).UTC(), ExpiresAt: time.UnixMilli(expires).UTC(),
	}, nil
}

// endSessionsScript ends the owner's live sessions among the ones in
// KEYS and takes them out of the owner's index (a session stored again
// under another owner is left alone).
//
//	KEYS[1] sessions:<owner>  KEYS[2..] session:<id>
//	ARGV[1] now  ARGV[2] owner  ARGV[3..] the ids of KEYS[2..]
//
// Returns how many live sessions it ended.
var endSessionsScript = newScript(`
local now = now_ms()
local n = 0
for i = 2, #KEYS do
  local f = redis.call('HMGET', KEYS[i], 'owner', 'expires')
  if f[1] == ARGV[2] then
    if tonumber(f[2]) > now then n = n + 1 end
    redis.call('DEL', KEYS[i])
  end
  redis.call('ZREM', KEYS[1], ARGV[i + 1])
end
return n
`)

// endSessions runs endSessionsScript on the owner's sessions ids.
func (s *Store) endSessions(ctx context.Context, owner string, ids []string) (int, error) {
	keys := []string{s.k.ownerSessions(owner)}
	args := []any{s.nowArg(), owner}
	for _, id := range ids {
		keys = append(keys, s.k.session(id))
		args = append(args, id)
	}
	n, err := endSessionsScript.Run(ctx, s.rdb, keys, args...).Int()
	return n, err
}

// EndSession ends the owner's session id.
func (s *Store) EndSession(ctx context.Context, owner, id string) error {
	_, err := s.endSessions(ctx, owner, []string{id})
	return wrapErr("end session", err)
}

// endSessionsBatch bounds the sessions one script ends.
const endSessionsBatch = 100

// EndSessions ends every session of the owner: those its index lists
// when it is read (a session stored meanwhile may live on: it began
// after the sign-out), a batch per script.
func (s *Store) EndSessions(ctx context.Context, owner string) (int, error) {
	ids, err := s.rdb.ZRange(ctx, s.k.ownerSessions(owner), 0, -1).Result()
	if err != nil {
		return 0, wrapErr("end sessions", err)
	}
	total := 0
	for len(ids) > 0 {
		batch := ids[:min(len(ids), endSessionsBatch)]
		ids = ids[len(batch):]
		n, err := s.endSessions(ctx, owner, batch)
		if err != nil {
			return total, wrapErr("end sessions", err)
		}
		total += n
	}
	return total, nil
}
