package redis

import (
	"context"
	"fmt"
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
// The record names the task its request asks for (task), and an
// in-flight record outlives its in-flight time (expires) until its keep
// time (keep, and the hash's TTL): one that names its task is not taken over
// once its time runs out but renewed as it is, its fingerprint and task
// kept, and answered as expired, for the caller to settle (see
// imagegen.IdempotencyStore). A record without task (written by an
// earlier version, whose TTL was its in-flight time) is taken over as
// before. A renewal sent again finds its own token on a record that
// names another task than its own, and answers expired again.
//
//	KEYS[1] idempotency record
//	ARGV[1] now  ARGV[2] fingerprint  ARGV[3] in-flight time (ms)  ARGV[4] the call's token
//	ARGV[5] the task's id  ARGV[6] keep time (ms, at least the in-flight time)
//
// Returns false when recorded now (or by this very call), else
// {fingerprint, state, status, body, task}, state "expired" for a
// record renewed to be settled.
var beginIdemScript = newScript(`
local now = now_ms()
local f = redis.call('HMGET', KEYS[1], 'fp', 'state', 'status', 'body', 'expires', 'tok', 'task', 'keep')
local task = f[7] or ''
if f[1] then
  if tonumber(f[5]) > now then
    if f[2] == 'inflight' and f[6] == ARGV[4] then
      if task == ARGV[5] then return false end
      return {f[1], 'expired', '', '', task}
    end
    return {f[1], f[2], f[3] or '', f[4] or '', task}
  end
  if f[2] == 'inflight' and task ~= '' and tonumber(f[8] or 0) > now then
    redis.call('HSET', KEYS[1], 'expires', now + tonumber(ARGV[3]), 'keep', now + tonumber(ARGV[6]), 'tok', ARGV[4])
    redis.call('PEXPIRE', KEYS[1], ARGV[6])
    return {f[1], 'expired', '', '', task}
  end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'fp', ARGV[2], 'state', 'inflight', 'expires', now + tonumber(ARGV[3]), 'tok', ARGV[4],
  'task', ARGV[5], 'keep', now + tonumber(ARGV[6]))
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return false
`)

// BeginIdempotent records a request in flight, or returns the record the
// key already has, or renews an expired in-flight record that names its
// task, for the caller to settle.
func (s *Store) BeginIdempotent(ctx context.Context, owner, key, fingerprint, taskID string, inFlight, ttl time.Duration) (*imagegen.IdempotencyRecord, error) {
	reply, err := beginIdemScript.Run(ctx, s.rdb, []string{s.idemKey(owner, key)}, s.nowArg(), fingerprint, ms(inFlight), callToken(),
		taskID, ms(max(ttl, inFlight))).Slice()
	if isNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapErr("begin idempotent request", err)
	}
	if len(reply) != 5 {
		return nil, wrapErr("begin idempotent request", fmt.Errorf("unexpected reply of %d values", len(reply)))
	}
	str := func(i int) string { v, _ := reply[i].(string); return v }
	status, _ := strconv.Atoi(str(2))
	return &imagegen.IdempotencyRecord{
		Fingerprint: str(0),
		Done:        str(1) == "done",
		Status:      status,
		Body:        []byte(str(3)),
		TaskID:      str(4),
		Expired:     str(1) == "expired",
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
