package redis

import (
	"context"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
)

// idemKey names an owner's idempotency key; the owner's length keeps
// owner and key apart whatever they contain.
func (s *Store) idemKey(owner, key string) string {
	return s.byOwner(owner).tag + ":idem:" + strconv.Itoa(len(owner)) + ":" + owner + ":" + key
}

// beginIdemScript records a request in flight unless the key holds a
// live record. The record keeps the call's token (tok): a run of the
// same call sent again after its reply was lost (go-redis sends a
// command again when its connection breaks after writing it) finds its
// own record in flight and answers as the first run did, where it would
// have answered "in flight" and left the key blocked until the record
// expired, with no request left to finish it.
//
//	KEYS[1] idempotency record
//	ARGV[1] now  ARGV[2] fingerprint  ARGV[3] in-flight time (ms)  ARGV[4] the call's token
//
// Returns false when recorded now (or by this very call), else
// {fingerprint, state, status, body}.
var beginIdemScript = newScript(`
local now = now_ms()
local f = redis.call('HMGET', KEYS[1], 'fp', 'state', 'status', 'body', 'expires', 'tok')
if f[1] and tonumber(f[5]) > now then
  if f[2] == 'inflight' and f[6] == ARGV[4] then return false end
  return {f[1], f[2], f[3], f[4]}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'fp', ARGV[2], 'state', 'inflight', 'expires', now + tonumber(ARGV[3]), 'tok', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return false
`)

// BeginIdempotent records a request in flight, or returns the record the
// key already has.
func (s *Store) BeginIdempotent(ctx context.Context, owner, key, fingerprint string, inFlight time.Duration) (*imagegen.IdempotencyRecord, error) {
	reply, err := beginIdemScript.Run(ctx, s.rdb, []string{s.idemKey(owner, key)}, s.nowArg(), fingerprint, ms(inFlight), callToken()).Slice()
	if isNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapErr("begin idempotent request", err)
	}
	str := func(i int) string { v, _ := reply[i].(string); return v }
	status, _ := strconv.Atoi(str(2))
	return &imagegen.IdempotencyRecord{
		Fingerprint: str(0),
		Done:        str(1) == "done",
		Status:      status,
		Body:        []byte(str(3)),
	}, nil
}

// finishIdemScript stores the response of the request in flight with
// this fingerprint; without such a live record it changes nothing.
//
//	KEYS[1] idempotency record
//	ARGV[1] now  ARGV[2] fingerprint  ARGV[3] status  ARGV[4] body  ARGV[5] ttl (ms)
//
// Returns 1 when stored, else 0.
var finishIdemScript = newScript(`
local now = now_ms()
local f = redis.call('HMGET', KEYS[1], 'fp', 'state', 'expires')
if f[1] ~= ARGV[2] or f[2] ~= 'inflight' or tonumber(f[3]) <= now then return 0 end
redis.call('HSET', KEYS[1], 'state', 'done', 'status', ARGV[3], 'body', ARGV[4], 'expires', now + tonumber(ARGV[5]))
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`)

// FinishIdempotent stores the response of the request in flight with
// this fingerprint; without such a live record it changes nothing.
func (s *Store) FinishIdempotent(ctx context.Context, owner, key, fingerprint string, status int, body []byte, ttl time.Duration) error {
	err := finishIdemScript.Run(ctx, s.rdb, []string{s.idemKey(owner, key)}, s.nowArg(), fingerprint, status, body, ms(ttl)).Err()
	return wrapErr("finish idempotent request", err)
}

// abandonIdemScript forgets the key if it holds the request in flight
// with this fingerprint.
//
//	KEYS[1] idempotency record
//	ARGV[1] now  ARGV[2] fingerprint
//
// Returns 1 when forgotten, else 0.
var abandonIdemScript = newScript(`
local now = now_ms()
local f = redis.call('HMGET', KEYS[1], 'fp', 'state', 'expires')
if f[1] ~= ARGV[2] or f[2] ~= 'inflight' or tonumber(f[3]) <= now then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)

// AbandonIdempotent forgets the key if it holds the request in flight
// with this fingerprint.
func (s *Store) AbandonIdempotent(ctx context.Context, owner, key, fingerprint string) error {
	err := abandonIdemScript.Run(ctx, s.rdb, []string{s.idemKey(owner, key)}, s.nowArg(), fingerprint).Err()
	return wrapErr("abandon idempotent request", err)
}
