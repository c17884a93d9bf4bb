package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
)

// claimCandidates is how many of the oldest pending tasks a claim
// considers, so that concurrent workers each find one in a single pass.
const claimCandidates = 8

// claimScript leases the first candidate that is still pending and ready.
//
//	KEYS[1] pending  KEYS[2] leases  KEYS[3..] candidate task keys
//	ARGV[1] now      ARGV[2] lease (ms)  ARGV[3..] candidate ids
//
// Returns the claimed task (HGETALL), 0 when no candidate is ready yet,
// or 1 when every ready candidate was taken meanwhile (look again).
var claimScript = newScript(`
local now = now_ms()
local lease = tonumber(ARGV[2])
local raced = 0
for i = 3, #KEYS do
  local id = ARGV[i]
  local runAfter = redis.call('ZSCORE', KEYS[1], id)
  if not runAfter then
    raced = 1
  elseif tonumber(runAfter) <= now then
    redis.call('ZREM', KEYS[1], id)
    if redis.call('HGET', KEYS[i], 'status') == 'pending' then
      redis.call('HINCRBY', KEYS[i], 'attempt', 1)
      redis.call('HSET', KEYS[i], 'status', 'processing', 'lease_until', now + lease, 'updated', now)
      redis.call('ZADD', KEYS[2], now + lease, id)
      return redis.call('HGETALL', KEYS[i])
    end
  end
end
return raced
`)

// ClaimTask leases the oldest ready pending task: one read of the queue
// head, then one script over the candidates it found.
func (s *Store) ClaimTask(ctx context.Context, lease time.Duration) (*imagegen.Task, error) {
	for range 3 {
		ids, err := s.rdb.ZRange(ctx, s.k.pending(), 0, claimCandidates-1).Result()
		if err != nil {
			return nil, fmt.Errorf("redis store: claim: %w", err)
		}
		if len(ids) == 0 {
			return nil, imagegen.ErrNoTask
		}
		keys := []string{s.k.pending(), s.k.leases()}
		args := []any{s.nowArg(), ms(lease)}
		for _, id := range ids {
			keys = append(keys, s.k.task(id))
			args = append(args, id)
		}
		reply, err := claimScript.Run(ctx, s.rdb, keys, args...).Result()
		if err != nil {
			return nil, fmt.Errorf("redis store: claim: %w", err)
		}
		if n, ok := reply.(int64); ok {
			if n == 0 {
				return nil, imagegen.ErrNoTask
			}
			continue // others took the candidates: look again
		}
		f, err := flatMap(reply)
		if err != nil {
			return nil, err
		}
		return decodeTask(f)
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

// runHolder runs a script whose ARGV are now, attempt, then args, and
// that answers 0 when attempt does not hold the lease.
func (s *Store) runHolder(ctx context.Context, script *goredis.Script, id string, attempt int, keys []string, args ...any) error {
	argv := append([]any{s.nowArg(), strconv.Itoa(attempt)}, args...)
	n, err := script.Run(ctx, s.rdb, keys, argv...).Int64()
	if err != nil {
		return fmt.Errorf("redis store: task %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("redis store: task %s attempt %d: %w", id, attempt, imagegen.ErrLeaseLost)
	}
	return nil
}
