package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/internal/leases"
	"github.com/imagegen/imagegen/store/storekit"
)

// claimCandidates is how many more of the oldest pending tasks a claim
// considers than it wants, so that concurrent workers each find theirs
// in a single pass.
const claimCandidates = 8

// claimScript leases up to ARGV[3] of the candidates that are still
// pending and ready, in order. A task's first claim stamps "started" and
// queues its processing callback, if it asks for one.
//
//	KEYS[1] pending  KEYS[2] leases  KEYS[3] webhooks  KEYS[4..] candidate task keys
//	ARGV[1] now      ARGV[2] lease (ms)  ARGV[3] how many  ARGV[4..] candidate ids
//
// Returns {raced, task...}: raced is 1 when a candidate was taken by
// someone else meanwhile (so looking again may find more), and each task
// is a claimed task's HGETALL.
var claimScript = newScript(`
local now = now_ms()
local lease, want = tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {0}
for i = 4, #KEYS do
  if #out > want then break end
  local id = ARGV[i]
  local runAfter = redis.call('ZSCORE', KEYS[1], id)
  if not runAfter then
    out[1] = 1
  elseif tonumber(runAfter) > now then
    break -- candidates are in run-after order: the rest are not ready either
  else
    redis.call('ZREM', KEYS[1], id)
    if redis.call('HGET', KEYS[i], 'status') == 'pending' then
      redis.call('HINCRBY', KEYS[i], 'attempt', 1)
      redis.call('HSET', KEYS[i], 'status', 'processing', 'lease_until', now + lease, 'updated', now, 'progress', 0)
      if redis.call('HSETNX', KEYS[i], 'started', now) == 1 and wants(KEYS[i], 'processing') then
        redis.call('ZADD', KEYS[3], now, id .. ':processing')
      end
      redis.call('ZADD', KEYS[2], now + lease, id)
      out[#out + 1] = redis.call('HGETALL', KEYS[i])
    end
  end
end
return out
`)

// ClaimTask leases the oldest ready pending task.
func (s *Store) ClaimTask(ctx context.Context, lease time.Duration) (*imagegen.Task, error) {
	return leases.First(s.ClaimTasks(ctx, lease, 1))
}

// ClaimTasks leases up to n ready pending tasks, oldest first: one read
// of the queue head, then one script over the candidates it found.
func (s *Store) ClaimTasks(ctx context.Context, lease time.Duration, n int) ([]*imagegen.Task, error) {
	n = min(max(n, 1), 64)
	for range 3 {
		ids, err := s.rdb.ZRange(ctx, s.k.pending(), 0, int64(n+claimCandidates-1)).Result()
		if err != nil {
			return nil, fmt.Errorf("redis store: claim: %w", err)
		}
		if len(ids) == 0 {
			return nil, imagegen.ErrNoTask
		}
		keys := make([]string, 0, 2+len(ids))
		keys = append(keys, s.k.pending(), s.k.leases(), s.k.webhooks())
		args := make([]any, 0, 3+len(ids))
		args = append(args, s.nowArg(), ms(lease), n)
		for _, id := range ids {
			keys = append(keys, s.k.task(id))
			args = append(args, id)
		}
		reply, err := claimScript.Run(ctx, s.rdb, keys, args...).Slice()
		if err != nil {
			return nil, fmt.Errorf("redis store: claim: %w", err)
		}
		tasks := make([]*imagegen.Task, 0, len(reply)-1)
		for _, r := range reply[1:] {
			f, err := flatMap(r)
			if err != nil {
				return nil, err
			}
			t, err := decodeTask(f)
			if err != nil {
				return nil, err
			}
			tasks = append(tasks, t)
		}
		if len(tasks) > 0 {
			return tasks, nil
		}
		if raced, _ := reply[0].(int64); raced == 0 {
			return nil, imagegen.ErrNoTask
		}
		// Others took the candidates: look again.
	}
	return nil, imagegen.ErrNoTask
}

// renewScript extends the lease of its holder.
//
//	KEYS[1] task  KEYS[2] leases
//	ARGV[1] now   ARGV[2] attempt  ARGV[3] lease (ms)  ARGV[4] id
//
// Returns 1, or 0 when attempt does not hold the lease.
var renewScript = newScript(`
local now = now_ms()
if not holds(KEYS[1], ARGV[2]) then return 0 end
local untilMS = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'lease_until', untilMS, 'updated', now)
redis.call('ZADD', KEYS[2], untilMS, ARGV[4])
return 1
`)

// RenewLease extends the lease of the holder of attempt.
func (s *Store) RenewLease(ctx context.Context, id string, attempt int, lease time.Duration) error {
	return s.runHolder(ctx, renewScript, id, attempt,
		[]string{s.k.task(id), s.k.leases()}, ms(lease), id)
}

// progressScript records a generation's progress on the task.
//
//	KEYS[1] task
//	ARGV[1] now   ARGV[2] attempt  ARGV[3] progress
//
// Returns 1, or 0 when attempt does not hold the lease.
var progressScript = newScript(`
if not holds(KEYS[1], ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'progress', ARGV[3])
return 1
`)

// SetProgress records the generation's progress on the task attempt
// holds.
func (s *Store) SetProgress(ctx context.Context, id string, attempt int, progress float64) error {
	return s.runHolder(ctx, progressScript, id, attempt, []string{s.k.task(id)},
		strconv.FormatFloat(progress, 'f', -1, 64))
}

// retryScript gives a task back to the queue, ready after a delay.
//
//	KEYS[1] task  KEYS[2] leases  KEYS[3] pending
//	ARGV[1] now   ARGV[2] attempt  ARGV[3] delay (ms)  ARGV[4] last error  ARGV[5] id
//
// Returns 1, or 0 when attempt does not hold the lease.
var retryScript = newScript(`
local now = now_ms()
if not holds(KEYS[1], ARGV[2]) then return 0 end
local runAfter = now + tonumber(ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[5])
redis.call('HSET', KEYS[1], 'status', 'pending', 'lease_until', 0, 'run_after', runAfter,
  'updated', now, 'last_error', ARGV[4])
redis.call('ZADD', KEYS[3], runAfter, ARGV[5])
return 1
`)

// RetryTask gives the task back to the queue, ready after delay.
func (s *Store) RetryTask(ctx context.Context, id string, attempt int, delay time.Duration, lastErr string) error {
	return s.runHolder(ctx, retryScript, id, attempt,
		[]string{s.k.task(id), s.k.leases(), s.k.pending()}, ms(delay), lastErr, id)
}

// releaseScript gives a task back to the queue, ready now, without
// counting the attempt (released grows by one).
//
//	KEYS[1] task  KEYS[2] leases  KEYS[3] pending
//	ARGV[1] now   ARGV[2] attempt  ARGV[3] last error  ARGV[4] id
//
// Returns 1, or 0 when attempt does not hold the lease.
var releaseScript = newScript(`
local now = now_ms()
if not holds(KEYS[1], ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[2], ARGV[4])
redis.call('HINCRBY', KEYS[1], 'released', 1)
redis.call('HSET', KEYS[1], 'status', 'pending', 'lease_until', 0, 'run_after', now,
  'updated', now, 'last_error', ARGV[3])
redis.call('ZADD', KEYS[3], now, ARGV[4])
return 1
`)

// ReleaseTask gives the task back to the queue, ready now, without
// counting the attempt.
func (s *Store) ReleaseTask(ctx context.Context, id string, attempt int) error {
	return s.runHolder(ctx, releaseScript, id, attempt,
		[]string{s.k.task(id), s.k.leases(), s.k.pending()}, storekit.ReleasedMessage, id)
}

// runHolder runs a script whose ARGV are now, attempt, then args, and
// that answers 0 when attempt does not hold the lease.
func (s *Store) runHolder(ctx context.Context, script *goredis.Script, id string, attempt int, keys []string, args ...any) error {
	n, err := s.ackedScript(ctx, script, keys, s.holderArgs(attempt, args)...).Int64()
	return leases.Result(storeName, id, attempt, n != 0, err)
}

// holderArgs are a holder script's ARGV: now, the attempt, then args.
func (s *Store) holderArgs(attempt int, args []any) []any {
	return append([]any{s.nowArg(), strconv.Itoa(attempt)}, args...)
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
// Returns {requeued, expired leases seen, failed...}, each failed task
// as {id, owner, model, request id, attempts, cost, refund} (strings;
// refund is the cost, or 0 when the task had been refunded before).
var recoverScript = newScript(`
local now = now_ms()
local retention = tonumber(ARGV[2])
local maxAttempts = tonumber(ARGV[3])
local out = {0, 0}
for i = 1, (#KEYS - 3) / 3 do
  local task, balance, ledger, id = KEYS[3 * i + 1], KEYS[3 * i + 2], KEYS[3 * i + 3], ARGV[3 + i]
  local leaseEnd = redis.call('ZSCORE', KEYS[1], id)
  if leaseEnd and tonumber(leaseEnd) <= now then
    out[2] = out[2] + 1
    local f = redis.call('HMGET', task, 'status', 'attempt', 'released', 'owner', 'model', 'rid', 'cost', 'refunded')
    local counted = (tonumber(f[2]) or 0) - (tonumber(f[3]) or 0) -- released claims do not count
    if f[1] ~= 'processing' then
      redis.call('ZREM', KEYS[1], id) -- left behind; nothing to recover
    elseif counted >= maxAttempts then
      local cost = f[7] or '0'
      local refunded = '0'
      if f[8] ~= '1' then refunded = cost end
      refund(task, balance, ledger, id, now)
      redis.call('HSET', task, 'error', 'image generation did not finish (' .. counted .. ' attempts)',
        'error_code', 'internal')
      finish(task, KEYS[1], id, 'failed', now, retention, KEYS[3])
      out[#out + 1] = {id, f[4] or '', f[5] or '', f[6] or '', tostring(counted), cost, refunded}
    else
      redis.call('ZREM', KEYS[1], id)
      redis.call('HSET', task, 'status', 'pending', 'lease_until', 0, 'run_after', now,
        'updated', now, 'last_error', 'lease expired')
      redis.call('ZADD', KEYS[2], now, id)
      out[1] = out[1] + 1
    end
  end
end
return out
`)

// RecoverExpired sends tasks whose lease ended back to pending, or fails
// and refunds them after maxAttempts, and reports them. Each batch reads
// the oldest leases and their owners, then runs one script that checks
// and moves them.
func (s *Store) RecoverExpired(ctx context.Context, maxAttempts int) (imagegen.Recovery, error) {
	var rec imagegen.Recovery
	for {
		ids, err := s.rdb.ZRange(ctx, s.k.leases(), 0, recoverBatch-1).Result()
		if err != nil || len(ids) == 0 {
			return rec, wrapErr("recover", err)
		}
		owners := make([]string, len(ids))
		pipe := s.rdb.Pipeline()
		cmds := make([]interface{ Val() string }, len(ids))
		for i, id := range ids {
			cmds[i] = pipe.HGet(ctx, s.k.task(id), "owner")
		}
		if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
			return rec, wrapErr("recover", err)
		}
		keys := []string{s.k.leases(), s.k.pending(), s.k.webhooks()}
		args := []any{s.nowArg(), ms(s.retention), strconv.Itoa(maxAttempts)}
		for i, id := range ids {
			owners[i] = cmds[i].Val()
			keys = append(keys, s.k.task(id), s.k.balance(owners[i]), s.k.ledger(owners[i]))
			args = append(args, id)
		}
		reply, err := recoverScript.Run(ctx, s.rdb, keys, args...).Slice()
		if err != nil {
			return rec, wrapErr("recover", err)
		}
		seen, err := addRecovery(&rec, reply)
		if err != nil {
			return rec, err
		}
		if seen < len(ids) || len(ids) < recoverBatch {
			return rec, nil // the rest of the leases are still valid
		}
	}
}

// addRecovery adds recoverScript's reply to rec and returns how many
// expired leases the script saw.
func addRecovery(rec *imagegen.Recovery, reply []any) (int, error) {
	if len(reply) < 2 {
		return 0, fmt.Errorf("redis store: recover: unexpected script reply of %d values", len(reply))
	}
	requeued, _ := reply[0].(int64)
	seen, _ := reply[1].(int64)
	rec.Requeued += int(requeued)
	for _, r := range reply[2:] {
		f, ok := r.([]any)
		if !ok || len(f) != 7 {
			return int(seen), fmt.Errorf("redis store: recover: unexpected failed task %v", r)
		}
		str := func(i int) string { v, _ := f[i].(string); return v }
		rec.Failed = append(rec.Failed, imagegen.ExpiredTask{
			ID: str(0), Owner: str(1), Model: str(2), RequestID: str(3),
			Attempts: int(atoi(str(4))), Cost: atoi(str(5)), Refund: atoi(str(6)),
		})
	}
	return int(seen), nil
}
