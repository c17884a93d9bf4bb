package redis

import (
	"context"
	"fmt"
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
//	KEYS[1] webhooks  KEYS[2] hookclaim:<token>  KEYS[3..] candidate task keys
//	ARGV[1] now  ARGV[2] lease (ms)  ARGV[3] the call's token (a *sendMark)  ARGV[4..] candidate delivery ids
//
// A run that leases deliveries records which (the lease end and their
// candidates' places, "<lease end>:<i>,<i>...") in KEYS[2], named by the
// call's token and expiring with the lease. A run sent again after its
// reply was lost (ARGV[3] written "a": go-redis sends a command again
// when its connection breaks) that finds the record answers with the
// deliveries of its first run that the same lease still holds (their
// score is its lease end), and leases no more; one that finds none (the
// first run never ran, or leased nothing) claims as any other. Only a
// run so marked reads the record: a claim sent once writes it and reads
// nothing more.
//
// Returns {id, owner, callback, attempts, lease end, ...} for each
// claimed delivery, the lease end (its new score) as an integer string.
var claimHooksScript = newScript(`
local now = now_ms()
local out = {}
if string.byte(ARGV[3]) == 97 then -- "a": sent again
  local lease_end, places = string.match(redis.call('GET', KEYS[2]) or '', '^(-?%d+):([%d,]+)$')
  if lease_end then -- the first run ran and leased these: answer them, as it did
    for i in string.gmatch(places, '%d+') do
      i = tonumber(i)
      local id = ARGV[i + 1]
      local due = redis.call('ZSCORE', KEYS[1], id)
      if due and tonumber(due) == tonumber(lease_end) then
        local f = redis.call('HMGET', KEYS[i], 'owner', 'callback', hook_attempts(id))
        if f[1] and f[2] then
          out[#out + 1], out[#out + 2], out[#out + 3], out[#out + 4] = id, f[1], f[2], f[3] or '0'
          out[#out + 1] = lease_end
        end
      end
    end
    return out
  end
end
local lease_end = now + tonumber(ARGV[2])
local places = {}
for i = 3, #KEYS do
  local id = ARGV[i + 1]
  local due = redis.call('ZSCORE', KEYS[1], id)
  if due and tonumber(due) <= now then
    local f = redis.call('HMGET', KEYS[i], 'owner', 'callback', hook_attempts(id))
    if not f[1] or not f[2] then
      redis.call('ZREM', KEYS[1], id) -- the task expired: nothing to send
    else
      redis.call('ZADD', KEYS[1], lease_end, id)
      out[#out + 1], out[#out + 2], out[#out + 3], out[#out + 4] = id, f[1], f[2], f[3] or '0'
      out[#out + 1] = string.format('%.0f', lease_end)
      places[#places + 1] = i
    end
  end
end
if #places > 0 then
  redis.call('SET', KEYS[2], string.format('%.0f', lease_end) .. ':' .. table.concat(places, ','), 'PX', math.max(tonumber(ARGV[2]), 1))
end
return out
`)

// ClaimWebhooks leases up to n due deliveries in due-time order (the
// webhooks sorted set is scored by due time); a store of several shards
// goes round them, from a shard further on at each call. Each is handed
// out under a claimed ID (storekit.ClaimedWebhookID) ending in its lease
// end in milliseconds: its score while that claim leases it. A claim
// whose reply was lost and that go-redis sent again answers with the
// deliveries its first run leased, under the same IDs.
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
	mark := newSendMark() // one per script run: each shard's is a command of its own
	keys := []string{sh.webhooks(), sh.hookClaim(mark.token)}
	args := []any{s.nowArg(), ms(lease), mark}
	for _, id := range ids {
		taskID, _ := storekit.ParseWebhookID(id)
		keys = append(keys, sh.task(taskID))
		args = append(args, id)
	}
	reply, err := runScript(ctx, s.rdb, claimHooksScript, keys, args...).StringSlice()
	if err != nil {
		return nil, wrapErr("claim webhooks", err)
	}
	out := make([]imagegen.WebhookDelivery, 0, len(reply)/5)
	for i := 0; i+4 < len(reply); i += 5 {
		attempts, _ := strconv.Atoi(reply[i+3])
		leaseEnd, err := strconv.ParseInt(reply[i+4], 10, 64)
		if err != nil {
			return nil, wrapErr("claim webhooks", fmt.Errorf("lease end %q: %w", reply[i+4], err))
		}
		taskID, event := storekit.ParseWebhookID(reply[i])
		out = append(out, imagegen.WebhookDelivery{
			ID: storekit.ClaimedWebhookID(reply[i], leaseEnd), TaskID: taskID, Event: event, Owner: reply[i+1], URL: reply[i+2], Attempts: attempts,
		})
	}
	return out, nil
}

// ackHookScript removes a delivery if it is still leased by the claim
// that set its score to ARGV[2].
//
//	KEYS[1] webhooks
//	ARGV[1] now (unused)  ARGV[2] lease end (ms)  ARGV[3] id
var ackHookScript = newScript(`
local due = redis.call('ZSCORE', KEYS[1], ARGV[3])
if not due or tonumber(due) ~= tonumber(ARGV[2]) then return 0 end
return redis.call('ZREM', KEYS[1], ARGV[3])
`)

// AckWebhook removes a delivery; with a claimed ID, only while that
// claim still leases it.
func (s *Store) AckWebhook(ctx context.Context, id string) error {
	id, leaseEnd, claimed := storekit.ParseClaimedWebhookID(id)
	taskID, _ := storekit.ParseWebhookID(id)
	sh := s.byID(taskID)
	if !claimed {
		return wrapErr("ack webhook", s.rdb.ZRem(ctx, sh.webhooks(), id).Err())
	}
	return wrapErr("ack webhook", ackHookScript.Run(ctx, s.rdb, []string{sh.webhooks()}, s.nowArg(), leaseEnd, id).Err())
}

// rescheduleHookScript makes a delivery due after a delay, counting
// ARGV[4] attempts (1 for a retry, 0 for a postponement); with a lease
// end in ARGV[5], only while the claim that set its score to it still
// leases it.
//
//	KEYS[1] webhooks  KEYS[2] task
//	ARGV[1] now  ARGV[2] delay (ms)  ARGV[3] id  ARGV[4] attempts to count
//	ARGV[5] lease end (ms), or "" for any
var rescheduleHookScript = newScript(`
local now = now_ms()
local due = redis.call('ZSCORE', KEYS[1], ARGV[3])
if not due then return 0 end
if ARGV[5] ~= '' and tonumber(due) ~= tonumber(ARGV[5]) then return 0 end
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
	id, leaseEnd, claimed := storekit.ParseClaimedWebhookID(id)
	end := ""
	if claimed {
		end = strconv.FormatInt(leaseEnd, 10)
	}
	taskID, _ := storekit.ParseWebhookID(id)
	sh := s.byID(taskID)
	return rescheduleHookScript.Run(ctx, s.rdb, []string{sh.webhooks(), sh.task(taskID)}, s.nowArg(), ms(delay), id, attempts, end).Err()
}
