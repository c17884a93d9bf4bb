package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// SetOwnerWeight sets owner's fair-share weight (the w field of the
// owner's sched hash).
func (s *Store) SetOwnerWeight(ctx context.Context, owner string, weight int) error {
	if err := storekit.CheckOwnerWeight(owner, weight); err != nil {
		return err
	}
	return wrapErr("set owner weight", s.rdb.HSet(ctx, s.byOwner(owner).sched(owner), "w", weight).Err())
}

// OwnerWeight returns owner's fair-share weight.
func (s *Store) OwnerWeight(ctx context.Context, owner string) (int, error) {
	w, err := s.rdb.HGet(ctx, s.byOwner(owner).sched(owner), "w").Int()
	switch {
	case isNil(err):
		return 1, nil
	case err != nil:
		return 0, wrapErr("owner weight", err)
	}
	return w, nil
}

// pauseScript holds back a model's starts until now + ARGV[2] ms,
// unless a pause already lasts longer. It notes the pause's end in the
// shard's paused set too (dropping the pauses that have ended), so that
// SchedulerStats lists every paused model, also one with no task
// queued: the claims read the model's hash alone.
//
//	KEYS[1] the model's hash  KEYS[2] paused (sorted set: model → pause end, ms)
//	ARGV[1] now  ARGV[2] pause (ms)  ARGV[3] the model's name
var pauseScript = newScript(`
local now = now_ms()
local untilMS = now + tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if untilMS > tonumber(redis.call('HGET', KEYS[1], 'pause') or '0') then
  redis.call('HSET', KEYS[1], 'pause', untilMS)
  redis.call('ZADD', KEYS[2], untilMS, ARGV[3])
end
return 1
`)

// PauseModel holds back model's starts until d from now (in every
// shard).
func (s *Store) PauseModel(ctx context.Context, model string, d time.Duration) error {
	for _, sh := range s.shards {
		if err := pauseScript.Run(ctx, s.rdb, []string{sh.model(model), sh.paused()}, s.nowArg(), ms(d), model).Err(); err != nil {
			return wrapErr("pause model", err)
		}
	}
	return nil
}

// statsScript reads the first ARGV[3] tasks in claim order (the fair
// queues merged, as a claim merges them, and each model's parked tasks) and says
// which ready ones the limits hold back, how many each owner has among
// them (with its running count), and which models are paused.
//
//	KEYS[1] fair (the legacy queue; the models' queues and fair:models are named from it)
//	ARGV[1] now  ARGV[2] owner cap  ARGV[3] how many to read
//	ARGV[4..] per limited model: name, cap, starts a minute
//
// Returns {held owner_cap, held model_cap, held model_rate,
// {owner, pending, running, ...}, {model, paused until (ms), ...}}.
var statsScript = newScript(`
local now = now_ms()
local ownerCap = tonumber(ARGV[2])
local caps, rates = {}, {}
for i = 4, #ARGV, 3 do
  caps[ARGV[i]], rates[ARGV[i]] = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
end
local held = {0, 0, 0}
local owners, order, models, running = {}, {}, {}, {}
-- Running counts come from the running sets where the store keeps them
-- (see claimScript), else from the leases (bounded by the running tasks).
local capped, byLease = kept_sets(skey(KEYS[1], 'capped')), nil
local function count(kind, name)
  local key = kind .. ':' .. name
  if running[key] then return running[key] end
  if capped[kind] or capped[key] then
    running[key] = redis.call('ZCOUNT', skey(KEYS[1], 'run:' .. key), '(' .. now, '+inf')
    return running[key]
  end
  if not byLease then
    byLease = {}
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', skey(KEYS[1], 'leases'), '(' .. now, '+inf')) do
      local f = redis.call('HMGET', skey(KEYS[1], 'task:' .. id), 'owner', 'model')
      local o, m = 'o:' .. (f[1] or ''), 'm:' .. (f[2] or '')
      byLease[o], byLease[m] = (byLease[o] or 0) + 1, (byLease[m] or 0) + 1
    end
  end
  running[key] = byLease[key] or 0
  return running[key]
end
-- The first ARGV[3] tasks in claim order: the fair queues merged (see
-- fair_queues).
local queues, left = fair_queues(KEYS[1], 128, nil, parked_sets(KEYS[1])), tonumber(ARGV[3])
while left > 0 do
  local q, id = queue_first(queues, 1024)
  if not q then break end
  q.i, left = q.i + 1, left - 1
  local f = redis.call('HMGET', skey(KEYS[1], 'task:' .. id), 'run_after', 'owner', 'model')
  local owner, model = f[2] or '', f[3] or ''
  if not owners[owner] then owners[owner] = 0; order[#order + 1] = owner end
  owners[owner] = owners[owner] + 1
  if not models[model] then
    local m = redis.call('HMGET', skey(KEYS[1], 'model:' .. model), 'next', 'pause')
    models[model] = {next = tonumber(m[1]) or 0, pause = tonumber(m[2]) or 0}
  end
  if (tonumber(f[1]) or 0) <= now then
    local m, cap, rate = models[model], caps[model] or 0, rates[model] or 0
    if ownerCap > 0 and count('o', owner) >= ownerCap then
      held[1] = held[1] + 1
    elseif cap > 0 and count('m', model) >= cap then
      held[2] = held[2] + 1
    elseif m.pause > now or (rate > 0 and m.next > now) then
      held[3] = held[3] + 1
    end
  end
end
local loads, paused = {}, {}
for _, owner in ipairs(order) do
  loads[#loads + 1] = owner
  loads[#loads + 1] = owners[owner]
  loads[#loads + 1] = count('o', owner)
end
for model in pairs(caps) do
  if not models[model] then
    local m = redis.call('HGET', skey(KEYS[1], 'model:' .. model), 'pause')
    models[model] = {pause = tonumber(m or '0')}
  end
end
-- The paused set names the models paused with no task read above (a
-- pause made before the set was kept is listed once its model's task
-- is read, or the model is named, as before).
local pausedSet = redis.call('ZRANGEBYSCORE', skey(KEYS[1], 'paused'), '(' .. now, '+inf', 'WITHSCORES')
for i = 1, #pausedSet, 2 do
  if not models[pausedSet[i]] then
    models[pausedSet[i]] = {pause = tonumber(pausedSet[i + 1])}
  end
end
for model, m in pairs(models) do
  if m.pause > now then
    paused[#paused + 1] = model
    paused[#paused + 1] = m.pause
  end
end
return {held[1], held[2], held[3], loads, paused}
`)

// SchedulerStats reports what l holds back among the first
// SchedulerScan tasks in claim order (of the shard's fair queues
// merged: a held model's tasks are counted as far as they lie among
// them, as when there was one queue), the owners with the most
// pending tasks among them, and the paused models (those of the tasks
// read and those l names).
func (s *Store) SchedulerStats(ctx context.Context, l imagegen.Limits) (imagegen.SchedulerStats, error) {
	st := imagegen.SchedulerStats{Held: map[imagegen.HoldReason]int{}, Paused: map[string]time.Time{}}
	for _, sh := range s.shards {
		if err := s.shardSchedulerStats(ctx, sh, l, &st); err != nil {
			return imagegen.SchedulerStats{}, err
		}
	}
	st.Busiest = storekit.SortBusiest(st.Busiest)
	return st, nil
}

// shardSchedulerStats adds one shard's SchedulerStats to st.
func (s *Store) shardSchedulerStats(ctx context.Context, sh keys, l imagegen.Limits, st *imagegen.SchedulerStats) error {
	args := appendModelLimits([]any{s.nowArg(), l.OwnerConcurrency, imagegen.SchedulerScan}, l)
	reply, err := statsScript.Run(ctx, s.rdb, []string{sh.fair()}, args...).Slice()
	if err != nil {
		return wrapErr("scheduler stats", err)
	}
	if len(reply) != 5 {
		return fmt.Errorf("redis store: scheduler stats: unexpected reply of %d values", len(reply))
	}
	for i, why := range imagegen.HoldReasons() {
		if n, _ := reply[i].(int64); n > 0 {
			st.Held[why] += int(n)
		}
	}
	loads, _ := reply[3].([]any)
	for i := 0; i+2 < len(loads); i += 3 {
		owner, _ := loads[i].(string)
		pending, _ := loads[i+1].(int64)
		running, _ := loads[i+2].(int64)
		st.Busiest = append(st.Busiest, imagegen.OwnerLoad{Owner: owner, Pending: int(pending), Running: int(running)})
	}
	paused, _ := reply[4].([]any)
	for i := 0; i+1 < len(paused); i += 2 {
		model, _ := paused[i].(string)
		if until := fromMS(replyIntOrZero(paused[i+1])); until.After(st.Paused[model]) {
			st.Paused[model] = until
		}
	}
	return nil
}
