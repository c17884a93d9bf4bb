package redis

import (
	"context"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

var (
	_ imagegen.WebhookStore = (*Store)(nil)
	_ imagegen.SecretStore  = (*Store)(nil)
)

// claimHooksScript leases the due deliveries among the candidates.
//
//	KEYS[1] webhooks  KEYS[2..] candidate task keys
//	ARGV[1] now  ARGV[2] lease (ms)  ARGV[3..] candidate delivery ids
//
// Returns {id, owner, callback, attempts, ...} for each claimed delivery.
var claimHooksScript = newScript(`
local now = now_ms()
local out = {}
for i = 2, #KEYS do
  local id = ARGV[i + 1]
  local due = redis.call('ZSCORE', KEYS[1], id)
  if due and tonumber(due) <= now then
    local f = redis.call('HMGET', KEYS[i], 'owner', 'callback', hook_attempts(id))
    if not f[1] or not f[2] then
      redis.call('ZREM', KEYS[1], id) -- the task expired: nothing to send
    else
      redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), id)
      out[#out + 1], out[#out + 2], out[#out + 3], out[#out + 4] = id, f[1], f[2], f[3] or '0'
    end
  end
end
return out
`)

// ClaimWebhooks leases up to n due deliveries in due-time order (the
// webhooks sorted set is scored by due time); a store of several shards
// goes round them, from a shard further on at each call.
func (s *Store) ClaimWebhooks(ctx context.Context, lease time.Duration, n int) ([]imagegen.WebhookDelivery, error) {
	var out []imagegen.WebhookDelivery
	start := int(s.next.Add(1))
	for i := range s.shards {
		got, err := s.claimShardWebhooks(ctx, s.shards[(start+i)%len(s.shards)], lease, n-len(out))
		if err != nil {
			return out, err
		}
		if out = append(out, got...); len(out) >= n {
			break
		}
	}
	return out, nil
}

// claimShardWebhooks is ClaimWebhooks on one shard.
func (s *Store) claimShardWebhooks(ctx context.Context, sh keys, lease time.Duration, n int) ([]imagegen.WebhookDelivery, error) {
	ids, err := s.rdb.ZRange(ctx, sh.webhooks(), 0, int64(max(n, 1))-1).Result()
	if err != nil || len(ids) == 0 {
		return nil, wrapErr("claim webhooks", err)
	}
	keys := []string{sh.webhooks()}
	args := []any{s.nowArg(), ms(lease)}
	for _, id := range ids {
		taskID, _ := storekit.ParseWebhookID(id)
		keys = append(keys, sh.task(taskID))
		args = append(args, id)
	}
	reply, err := claimHooksScript.Run(ctx, s.rdb, keys, args...).StringSlice()
	if err != nil {
		return nil, wrapErr("claim webhooks", err)
	}
	out := make([]imagegen.WebhookDelivery, 0, len(reply)/4)
	for i := 0; i+3 < len(reply); i += 4 {
		attempts, _ := strconv.Atoi(reply[i+3])
		taskID, event := storekit.ParseWebhookID(reply[i])
		out = append(out, imagegen.WebhookDelivery{ID: reply[i], TaskID: taskID, Event: event, Owner: reply[i+1], URL: reply[i+2], Attempts: attempts})
	}
	return out, nil
}

// AckWebhook removes a delivery.
func (s *Store) AckWebhook(ctx context.Context, id string) error {
	return wrapErr("ack webhook", s.rdb.ZRem(ctx, s.byID(id).webhooks(), id).Err())
}

// rescheduleHookScript makes a delivery due after a delay, counting
// ARGV[4] attempts (1 for a retry, 0 for a postponement).
//
//	KEYS[1] webhooks  KEYS[2] task
//	ARGV[1] now  ARGV[2] delay (ms)  ARGV[3] id  ARGV[4] attempts to count
var rescheduleHookScript = newScript(`
local now = now_ms()
if not redis.call('ZSCORE', KEYS[1], ARGV[3]) then return 0 end
-- A task gone (its retention over) is not made again as a hash of one
-- field with no TTL: its delivery finds no task and is dropped.
if ARGV[4] ~= '0' and redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HINCRBY', KEYS[2], hook_attempts(ARGV[3]), ARGV[4]) end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
return 1
`)

// RetryWebhook counts an attempt and reschedules the delivery.
func (s *Store) RetryWebhook(ctx context.Context, id string, delay time.Duration) error {
	return wrapErr("retry webhook", s.rescheduleHook(ctx, id, delay, 1))
}

// PostponeWebhook reschedules the delivery, counting no attempt.
func (s *Store) PostponeWebhook(ctx context.Context, id string, delay time.Duration) error {
	return wrapErr("postpone webhook", s.rescheduleHook(ctx, id, delay, 0))
}

func (s *Store) rescheduleHook(ctx context.Context, id string, delay time.Duration, attempts int) error {
	taskID, _ := storekit.ParseWebhookID(id)
	return rescheduleHookScript.Run(ctx, s.rdb, []string{s.byID(taskID).webhooks(), s.byID(taskID).task(taskID)}, s.nowArg(), ms(delay), id, attempts).Err()
}
