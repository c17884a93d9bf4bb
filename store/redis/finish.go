package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/imagegen/imagegen"
)

// completeScript records the images and moves the task to success. With
// the default BlobStore it stores the bytes too, so success is one round
// trip and no bytes are written for a lost lease.
//
//	KEYS[1] task  KEYS[2] leases  KEYS[3] webhooks
//	KEYS[4..]  per image: its record key, then (inline) its blob key
//	ARGV[1] now   ARGV[2] attempt  ARGV[3] retention (ms)  ARGV[4] id
//	ARGV[5] image ids (JSON)  ARGV[6] inline: 1 when the bytes are here
//	ARGV[7..]  per image: content type, then (inline) the bytes
//
// Returns 1, or 0 when attempt does not hold the lease.
var completeScript = newScript(`
local now = now_ms()
if not holds(KEYS[1], ARGV[2]) then return 0 end
local retention = tonumber(ARGV[3])
local step = ARGV[6] == '1' and 2 or 1
for k = 4, #KEYS, step do
  local a = 7 + (k - 4)
  redis.call('HSET', KEYS[k], 'task', ARGV[4], 'type', ARGV[a], 'expires', now + retention)
  redis.call('PEXPIRE', KEYS[k], retention)
  if step == 2 then
    redis.call('SET', KEYS[k + 1], ARGV[a + 1], 'PX', retention)
  end
end
redis.call('HSET', KEYS[1], 'images', ARGV[5])
finish(KEYS[1], KEYS[2], ARGV[4], 'success', now, retention, KEYS[3])
return 1
`)

// CompleteTask stores the images and moves the task to success. With a
// BlobStore of the operator's, the bytes go there first; if the lease
// turns out to be lost, they are deleted again (best effort).
func (s *Store) CompleteTask(ctx context.Context, id string, attempt int, images []imagegen.Image) error {
	_, inline := s.blobs.(*redisBlobs)
	ids := make([]string, len(images))
	keys := []string{s.k.task(id), s.k.leases(), s.k.webhooks()}
	for i, img := range images {
		if img.ID == "" {
			return errors.New("redis store: image needs an ID")
		}
		ids[i] = img.ID
		keys = append(keys, s.k.image(img.ID))
		if inline {
			keys = append(keys, s.k.blob(img.ID))
		}
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("redis store: encode image ids: %w", err)
	}
	args := []any{ms(s.retention), id, idsJSON, map[bool]string{true: "1", false: "0"}[inline]}
	for _, img := range images {
		args = append(args, img.ContentType)
		if inline {
			args = append(args, img.Data)
			continue
		}
		if err := s.blobs.Put(ctx, img.ID, img.Data, s.retention); err != nil {
			return fmt.Errorf("redis store: store image: %w", err)
		}
	}
	err = s.runHolder(ctx, completeScript, id, attempt, keys, args...)
	if errors.Is(err, imagegen.ErrLeaseLost) && !inline {
		for _, img := range images {
			_ = s.blobs.Delete(ctx, img.ID) // best effort: they expire anyway
		}
	}
	return err
}

// failScript moves the task to failed and refunds it once.
//
//	KEYS[1] task  KEYS[2] leases  KEYS[3] balance  KEYS[4] ledger  KEYS[5] webhooks
//	ARGV[1] now   ARGV[2] attempt  ARGV[3] retention (ms)  ARGV[4] reason  ARGV[5] id
//	ARGV[6] error code
//
// Returns 1, or 0 when attempt does not hold the lease.
var failScript = newScript(`
local now = now_ms()
if not holds(KEYS[1], ARGV[2]) then return 0 end
refund(KEYS[1], KEYS[3], KEYS[4], ARGV[5], now)
redis.call('HSET', KEYS[1], 'error', ARGV[4], 'error_code', ARGV[6])
finish(KEYS[1], KEYS[2], ARGV[5], 'failed', now, tonumber(ARGV[3]), KEYS[5])
return 1
`)

// FailTask moves the task to failed and refunds it once. It reads the
// task's owner first, to name the owner's credit keys in the script.
func (s *Store) FailTask(ctx context.Context, id string, attempt int, f imagegen.Failure) error {
	owner, err := s.rdb.HGet(ctx, s.k.task(id), "owner").Result()
	if err != nil {
		if isNil(err) {
			return fmt.Errorf("redis store: task %s attempt %d: %w", id, attempt, imagegen.ErrLeaseLost)
		}
		return fmt.Errorf("redis store: fail task: %w", err)
	}
	return s.runHolder(ctx, failScript, id, attempt,
		[]string{s.k.task(id), s.k.leases(), s.k.balance(owner), s.k.ledger(owner), s.k.webhooks()},
		ms(s.retention), f.Message, id, string(f.Code))
}

// cancelScript fails the owner's pending or processing task and refunds
// it. A processing task's lease ends with it (finish takes it out of the
// leases), so its worker can change nothing more.
//
//	KEYS[1] task  KEYS[2] pending  KEYS[3] balance  KEYS[4] ledger  KEYS[5] leases  KEYS[6] webhooks
//	ARGV[1] now   ARGV[2] owner  ARGV[3] reason  ARGV[4] retention (ms)  ARGV[5] id
//	ARGV[6] error code
//
// Returns 1, 0 when there is no such task of the owner, or -1 when the
// task has finished.
var cancelScript = newScript(`
local now = now_ms()
local f = redis.call('HMGET', KEYS[1], 'owner', 'status')
if f[1] ~= ARGV[2] then return 0 end
if f[2] ~= 'pending' and f[2] ~= 'processing' then return -1 end
redis.call('ZREM', KEYS[2], ARGV[5])
refund(KEYS[1], KEYS[3], KEYS[4], ARGV[5], now)
redis.call('HSET', KEYS[1], 'error', ARGV[3], 'error_code', ARGV[6])
finish(KEYS[1], KEYS[5], ARGV[5], 'failed', now, tonumber(ARGV[4]), KEYS[6])
return 1
`)

// CancelTask fails owner's pending or processing task and refunds it.
func (s *Store) CancelTask(ctx context.Context, owner, id string) error {
	k := s.k
	n, err := cancelScript.Run(ctx, s.rdb,
		[]string{k.task(id), k.pending(), k.balance(owner), k.ledger(owner), k.leases(), k.webhooks()},
		s.nowArg(), owner, imagegen.CancelledMessage, ms(s.retention), id, string(imagegen.CodeCancelled),
	).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("redis store: cancel: %w", err)
	case n == 0:
		return imagegen.ErrTaskNotFound
	case n < 0:
		return fmt.Errorf("redis store: cancel task %s: %w", id, imagegen.ErrInvalidTransition)
	}
	return nil
}

// recoverBatch is how many leases one recovery script looks at.
const recoverBatch = 100

// recoverScript requeues tasks whose lease has ended, or fails and
// refunds those that have had maxAttempts attempts.
//
//	KEYS[1] leases  KEYS[2] pending  KEYS[3] webhooks
//	KEYS[3i+1..3i+3] for candidate i (1-based): task, balance, ledger
//	ARGV[1] now  ARGV[2] retention (ms)  ARGV[3] max attempts
//	ARGV[3+i] candidate i's id
//
// Returns {moved, expired leases seen}.
var recoverScript = newScript(`
local now = now_ms()
local retention = tonumber(ARGV[2])
local maxAttempts = tonumber(ARGV[3])
local moved, seen = 0, 0
for i = 1, (#KEYS - 3) / 3 do
  local task, balance, ledger, id = KEYS[3 * i + 1], KEYS[3 * i + 2], KEYS[3 * i + 3], ARGV[3 + i]
  local leaseEnd = redis.call('ZSCORE', KEYS[1], id)
  if leaseEnd and tonumber(leaseEnd) <= now then
    seen = seen + 1
    local f = redis.call('HMGET', task, 'status', 'attempt')
    if f[1] ~= 'processing' then
      redis.call('ZREM', KEYS[1], id) -- left behind; nothing to recover
    elseif tonumber(f[2]) >= maxAttempts then
      refund(task, balance, ledger, id, now)
      redis.call('HSET', task, 'error', 'image generation did not finish (' .. f[2] .. ' attempts)',
        'error_code', 'internal')
      finish(task, KEYS[1], id, 'failed', now, retention, KEYS[3])
      moved = moved + 1
    else
      redis.call('ZREM', KEYS[1], id)
      redis.call('HSET', task, 'status', 'pending', 'lease_until', 0, 'run_after', now,
        'updated', now, 'last_error', 'lease expired')
      redis.call('ZADD', KEYS[2], now, id)
      moved = moved + 1
    end
  end
end
return {moved, seen}
`)

// RecoverExpired sends tasks whose lease ended back to pending, or fails
// and refunds them after maxAttempts. Each batch reads the oldest leases
// and their owners, then runs one script that checks and moves them.
func (s *Store) RecoverExpired(ctx context.Context, maxAttempts int) (int, error) {
	total := 0
	for {
		ids, err := s.rdb.ZRange(ctx, s.k.leases(), 0, recoverBatch-1).Result()
		if err != nil || len(ids) == 0 {
			return total, wrapErr("recover", err)
		}
		owners := make([]string, len(ids))
		pipe := s.rdb.Pipeline()
		cmds := make([]interface{ Val() string }, len(ids))
		for i, id := range ids {
			cmds[i] = pipe.HGet(ctx, s.k.task(id), "owner")
		}
		if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
			return total, wrapErr("recover", err)
		}
		keys := []string{s.k.leases(), s.k.pending(), s.k.webhooks()}
		args := []any{s.nowArg(), ms(s.retention), strconv.Itoa(maxAttempts)}
		for i, id := range ids {
			owners[i] = cmds[i].Val()
			keys = append(keys, s.k.task(id), s.k.balance(owners[i]), s.k.ledger(owners[i]))
			args = append(args, id)
		}
		res, err := recoverScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
		if err != nil {
			return total, wrapErr("recover", err)
		}
		total += int(res[0])
		if int(res[1]) < len(ids) || len(ids) < recoverBatch {
			return total, nil // the rest of the leases are still valid
		}
	}
}
