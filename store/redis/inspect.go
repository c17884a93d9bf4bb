package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
)

// QueueStats counts the pending and leased tasks and reads the oldest
// pending run-after time, in one round trip (two ZCARDs and a ZRANGE of
// one member per shard, and the server's TIME).
func (s *Store) QueueStats(ctx context.Context) (imagegen.QueueStats, error) {
	pipe := s.rdb.Pipeline()
	type counts struct {
		pending, leased *goredis.IntCmd
		head            *goredis.ZSliceCmd
	}
	per := make([]counts, len(s.shards))
	for i, sh := range s.shards {
		per[i] = counts{pipe.ZCard(ctx, sh.pending()), pipe.ZCard(ctx, sh.leases()), pipe.ZRangeWithScores(ctx, sh.pending(), 0, 0)}
	}
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return imagegen.QueueStats{}, wrapErr("queue stats", err)
	}
	t := now.Val()
	if s.clock != nil {
		t = s.clock.Now()
	}
	var st imagegen.QueueStats
	for _, c := range per {
		st.Pending += c.pending.Val()
		st.Processing += c.leased.Val()
		if h := c.head.Val(); len(h) == 1 {
			st.OldestPending = max(st.OldestPending, t.Sub(time.UnixMilli(int64(h[0].Score))))
		}
	}
	return st, nil
}

// TaskByID returns any owner's task.
func (s *Store) TaskByID(ctx context.Context, id string) (*imagegen.Task, error) {
	f, err := s.liveHash(ctx, s.byID(id).task(id), "task", imagegen.ErrTaskNotFound)
	if err != nil {
		return nil, err
	}
	t, err := decodeTask(f)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// requeueScript gives a failed task back to the queue, ready now, and
// with a recharge debits its cost again. Its deliveries still queued
// are dropped, with their attempts: its next ending queues its own, due
// then, with none.
//
//	KEYS[1] task  KEYS[2] pending  KEYS[3] balance  KEYS[4] ledger  KEYS[5] webhooks
//	ARGV[1] now  ARGV[2] id  ARGV[3] owner  ARGV[4] recharge: "1" or "0"
//	ARGV[5] recharge ledger entry JSON up to its time  ARGV[6] re-refund reference
//	ARGV[7] the call's token (random)  ARGV[8] the task's attempt as read
//
// The requeue leaves its call's token on the task, in a field of its
// own (rx): a run sent again after its reply was lost (go-redis sends a
// command again when its connection breaks) finds the task requeued by
// its own call and answers as the first run did, not -1, requeueing and
// recharging nothing more, whatever the task did since (claimed,
// cancelled, failed again, given back by its worker, succeeded). cx,
// where a cancel and a worker's failure, retry or release keep theirs,
// is left alone: a failure sent again after an operator requeued the
// task still finds its own call there. Only a second requeue in between
// writes rx over (its run sent again then answers by the task's status).
//
// A queue the task goes back into that holds a value of another kind
// (see takes_enqueue) fails the requeue before its first write: the
// task stays failed, and nothing is charged. Else the requeue debited
// the recharge and set the task pending, then failed in enqueue: the
// charge kept, the task in no queue (never claimed).
//
// A recharge's references are named after the attempt RequeueTask read
// (ARGV[8]): a task requeued, claimed and failed again since has another,
// and the script refuses it (-5) rather than charge, or refuse as a
// duplicate, under the references of an attempt that is not the task's.
//
// A recharge of a task never refunded (its owner's cancel kept its
// started charge) is refused (-6), here and not only by the caller's
// read: the check and the charge are one step, so an operator's check
// cannot be outrun by another's recharge, a claim and such a cancel.
//
// Returns 1, 0 when there is no such task, -1 when it is not failed,
// -2 when the balance is short of the recharge, -3 when the recharge's
// reference (RechargeRef of the task's attempt) is already used, -4
// when a queue cannot take the task, -5 when a recharge's task is at an
// attempt other than ARGV[8], -6 when a recharge's task was not
// refunded.
var requeueScript = newScript(`
local now = now_ms()
local f = redis.call('HMGET', KEYS[1], 'owner', 'status', 'cost', 'rx', 'refund_ref', 'model', 'attempt', 'refunded')
if f[1] ~= ARGV[3] then return 0 end
if f[4] == ARGV[7] then return 1 end -- this very requeue, sent again
if f[2] ~= 'failed' then return -1 end
if not takes_enqueue(KEYS[1], f[6] or '') then return -4 end
if ARGV[4] == '1' then
  if tonumber(f[7] or '0') ~= tonumber(ARGV[8]) then return -5 end -- failed again since the read
  -- A recharge at this attempt was made before (its re-refund reference
  -- is the task's): the task failed again unclaimed, cancelled while
  -- pending, and the recharge's reference is taken.
  if f[5] == ARGV[6] then return -3 end
  -- Its last charge was never refunded (its owner's cancel kept it): a
  -- recharge would be its second.
  if f[8] ~= '1' then return -6 end
  local cost = tonumber(f[3])
  local balance = tonumber(redis.call('GET', KEYS[3]) or '0')
  if balance < cost then return -2 end
  if not takes_list(KEYS[4]) then -- a ledger of another kind failed the RPUSH after the debit, kept
    return redis.error_reply("the owner's ledger holds a value of another kind; nothing changed")
  end
  local after = redis.call('DECRBY', KEYS[3], cost)
  redis.call('RPUSH', KEYS[4], ARGV[5] .. int(now) .. ',"bal":' .. exact_balance(KEYS[3], after) .. '}')
  redis.call('HSET', KEYS[1], 'refunded', '0', 'refund_ref', ARGV[6])
end
redis.call('HDEL', KEYS[1], 'error', 'error_code', 'finished', 'expires', 'hook_attempts', 'hook_attempts_processing')
-- A pcall: webhooks of another kind holds none of the task's deliveries,
-- and a plain call failing here, after the recharge, kept the charge
-- with the task still failed.
redis.pcall('ZREM', KEYS[5], ARGV[2], ARGV[2] .. ':processing')
redis.call('HSET', KEYS[1], 'status', 'pending', 'updated', now, 'run_after', now, 'rx', ARGV[7])
redis.call('PERSIST', KEYS[1])
enqueue(KEYS[1], ARGV[2], now, f[1], f[6])
return 1
`)

// RequeueTask gives a failed task back to the queue, ready now. It reads
// the task's owner and attempt first, to name the owner's credit keys
// and a recharge's references. A task that failed again at a later
// attempt between the read and the script is read again, once; should
// it move again, RequeueTask answers errAttemptMoved (an
// ErrInvalidTransition) and nothing is changed. A requeue whose reply
// was lost and that go-redis sent again answers as done, not
// ErrInvalidTransition.
func (s *Store) RequeueTask(ctx context.Context, id string, recharge bool) error {
	for reads := 1; ; reads++ {
		t, err := s.TaskByID(ctx, id)
		if err != nil {
			return err
		}
		err = s.requeueRead(ctx, t, recharge)
		if !errors.Is(err, errAttemptMoved) || reads == 2 {
			return err
		}
	}
}

// requeueRead runs requeueScript for task t as RequeueTask read it.
func (s *Store) requeueRead(ctx context.Context, t *imagegen.Task, recharge bool) error {
	id := t.ID
	var entry string
	if recharge {
		ref, err := json.Marshal(imagegen.RechargeRef(id, t.Attempt))
		if err != nil {
			return fmt.Errorf("redis store: encode reference: %w", err)
		}
		entry = fmt.Sprintf(`{"kind":"charge","amount":%d,"ref":%s,"at":`, -t.Cost, ref)
	}
	sh := s.byID(id)
	n, err := s.ackedScript(ctx, requeueScript, // acknowledged: it may recharge or refund
		[]string{sh.task(id), sh.pending(), sh.balance(t.Owner), sh.ledger(t.Owner), sh.webhooks()},
		s.nowArg(), id, t.Owner, luaFlag(recharge), entry, imagegen.RerefundRef(id, t.Attempt), callToken(), t.Attempt,
	).Int64()
	switch {
	case err != nil:
		return wrapErr("requeue", err)
	case n == 0:
		return imagegen.ErrTaskNotFound
	case n == -1:
		return fmt.Errorf("redis store: requeue %s task: %w", t.Status, imagegen.ErrInvalidTransition)
	case n == -2:
		return imagegen.ErrInsufficientCredits
	case n == -3:
		return fmt.Errorf("redis store: requeue %s: recharge %w", id, imagegen.ErrDuplicateEntry)
	case n == -4:
		return fmt.Errorf("redis store: requeue %s: %w", id, errQueueKeys)
	case n == -5:
		return fmt.Errorf("redis store: requeue %s read at attempt %d: %w", id, t.Attempt, errAttemptMoved)
	case n == -6:
		return fmt.Errorf("redis store: requeue %s: recharge of a task never refunded: %w", id, imagegen.ErrDuplicateEntry)
	}
	return nil
}

// PurgeExpired walks the index of all tasks and removes the entries of
// tasks that are gone. Redis TTLs remove the tasks and images themselves;
// with an injected Clock (tests), tasks expired by it are deleted here.
func (s *Store) PurgeExpired(ctx context.Context) (int, error) {
	removed := 0
	for _, sh := range s.shards {
		var cursor uint64
		for {
			members, next, err := s.rdb.ZScan(ctx, sh.allTasks(), cursor, "", 200).Result()
			if err != nil {
				return removed, wrapErr("purge", err)
			}
			n, err := s.purgeMembers(ctx, sh, members)
			removed += n
			if err != nil {
				return removed, err
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return removed, nil
}

// purgeMembers checks a ZSCAN batch (member, score, member, score ...).
func (s *Store) purgeMembers(ctx context.Context, sh keys, scan []string) (int, error) {
	var members []string
	for i := 0; i < len(scan); i += 2 {
		members = append(members, scan[i])
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*goredis.SliceCmd, len(members))
	for i, m := range members {
		_, id, _ := strings.Cut(m, ":")
		cmds[i] = pipe.HMGet(ctx, sh.task(id), "id", "expires", "images")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, wrapErr("purge", err)
	}
	var gone []any
	for i, m := range members {
		v := cmds[i].Val()
		if v[0] == nil {
			gone = append(gone, m)
			continue
		}
		expires, _ := v[1].(string)
		if !s.expired(atoi(expires)) {
			continue
		}
		var imgs []string
		if raw, _ := v[2].(string); raw != "" {
			_ = json.Unmarshal([]byte(raw), &imgs)
		}
		del := []string{sh.task(fmt.Sprint(v[0]))}
		for _, img := range imgs {
			del = append(del, sh.image(img))
			_ = s.blobs.Delete(ctx, img) // best effort, as after a lost lease
		}
		if err := s.rdb.Del(ctx, del...).Err(); err != nil {
			return len(gone), wrapErr("purge", err)
		}
		gone = append(gone, m)
	}
	if len(gone) > 0 {
		if err := s.rdb.ZRem(ctx, sh.allTasks(), gone...).Err(); err != nil {
			return 0, wrapErr("purge", err)
		}
	}
	return len(gone), nil
}
