package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/internal/leases"
	"github.com/imagegen/imagegen/store/storekit"
)

// claimScript leases up to ARGV[3] ready pending tasks in fair-share
// order (the fair queues merged, lowest tag first: see fair_queues in
// the prelude), passing over the models that a pause, a cap or a rate
// holds back without reading their queues, and at most ARGV[5] tasks
// of each queue that are not ready or that the owner cap holds back
// (in the legacy queue, tasks of a held model too). The tasks of an
// owner found at its cap are passed over uncounted and parked, at most
// 1024 a queue and claim, and the parked queues of up to 64 parked
// owners a model are looked at and merged for those with a free slot
// (see fair_queues in the prelude). The retries met in a model's queue
// waiting out their delay are moved aside, uncounted, at most 1024 a
// queue and claim, into the model's delayed retries, and each claim
// first moves back those now due, at most 1024 a model (see
// fair_queues). A task's
// first claim stamps "started" and queues its processing callback, if
// it asks for one. A model with a rate has its next start pushed a
// minute/rate later.
//
// Running counts: a claimed task counts in its owner's and its model's
// running sets until it leaves processing or its lease ends, but only
// once some claim has had a cap of that kind (for a model, a cap for
// that model): a store whose claimers cap nothing keeps no sets, which
// saves four commands a task. The first capped claim notes in capped
// that the sets are kept from then on, and puts the tasks running at
// that moment in them (from the leases: bounded by the running tasks).
//
// A task's owner's and model's keys (running sets, the model's rate
// and pause) only limit it: the claim reads and writes them with
// pcalls, and one of another kind (which only something other than the
// store writes) reads as none. The claim sets each task it takes as
// processing as it goes and writes their leases at the end, so a call
// that fails in between would leave the tasks taken before it, of any
// owner, processing with no lease (never recovered), and fail every
// later claim at the same task.
//
// The store-wide keys it writes with plain calls, the leases and the
// webhooks, are another matter: one of another kind fails the claim
// (every claim, until it is mended), but must not fail it after a task
// was set processing. The first task claimed has its lease written
// before anything else (the others' are written in one call at the
// end, as before: a claim of one task makes no more calls), and the
// processing callbacks are queued last, once the tasks hold their
// leases and have left the queues: a claim that fails there leaves them
// as a worker that died with them does, recovered when their leases
// end. Else each claim set its tasks processing, then failed, leaving
// them processing with no lease and (as the leases are written before
// the tasks leave the queues) in the fair queue, passed over by every
// later claim: never recovered, and once ClaimScan of them lay at its
// head, no claim found a task (now: no task of their queue).
//
//	KEYS[1] fair (the legacy queue; the models' queues and fair:models are named from it)
//	KEYS[2] leases  KEYS[3] webhooks  KEYS[4] vtag  KEYS[5] capped  KEYS[6] vtime
//	ARGV[1] now   ARGV[2] lease (ms)  ARGV[3] how many  ARGV[4] owner cap (0: none)
//	ARGV[5] how many to pass over at most, in each queue
//	ARGV[6] the call's token: "f" and the token, or "a" and the token when the call is sent again (see sendMark)
//	ARGV[7..] per limited model: name, cap (0: none), starts a minute (0: none)
//
// A run sent again (go-redis sends a command again when its connection
// breaks after it was written, so a run whose reply was lost runs
// twice) answers with the tasks its first run claimed, if it claimed
// any, and claims no more: each task claimed keeps the token (ct), and
// they share one lease end. Only a run marked as sent again looks for
// them; a claim sent once reads nothing more.
//
// Returns the claimed tasks, each as the values of claimedFields joined by
// NULs (or, when one but the last holds a NUL, as a list of them).
var claimScript = newScript(`
local now = now_ms()
local lease, want, ownerCap, scan = ARGV[2] + 0, ARGV[3] + 0, ARGV[4] + 0, ARGV[5] + 0
local ct = ARGV[6] -- as the first run wrote it: "f" and the token
if string.byte(ct) == 97 then -- "a": sent again
  -- What the first run of this call claimed: the tasks holding its
  -- token, still processing, among the leases that have not ended by
  -- now and end by now + lease (the first run's, which ran before, end
  -- there), newest first. The first run's tasks share one lease end:
  -- once one is found, the scan stops at the first lease that ends
  -- otherwise. (Here, not in a function: a function is made at every
  -- run, and a claim sent once makes none.)
  ct = 'f' .. string.sub(ct, 2)
  local out, at, from, task_prefix = {}, nil, 0, skey(KEYS[1], 'task:')
  while true do
    local ids = redis.call('ZREVRANGEBYSCORE', KEYS[2], int(now + lease), int(now), 'WITHSCORES', 'LIMIT', int(from), '64')
    for j = 1, #ids, 2 do
      if at and ids[j + 1] ~= at then break end
      -- The token and status, then the rest of claimedFields, in order.
      local f = redis.call('HMGET', task_prefix .. ids[j], 'ct', 'status', 'owner', 'model', 'attempt', 'lease_until',
        'updated', 'started', 'run_after', 'req', 'cost', 'created', 'rid', 'released', 'refunded', 'last_error')
      if f[1] == ct and f[2] == 'processing' then
        at = ids[j + 1]
        local v = {ids[j]}
        for k = 3, 16 do v[k - 1] = f[k] or '' end
        out[#out + 1] = v
      end
    end
    if #ids < 128 or (at and ids[#ids] ~= at) then break end
    from = from + 64
  end
  if #out > 0 then return out end
end
local snow, sleased = int(now), int(now + lease)
local after_now = '(' .. snow
-- in_chunks calls command on key with args, 512 of them a call
-- (unpack's limit), with pcalls; it reports whether every call took
-- them (a key of another kind takes none: the first call fails, and no
-- more are made).
local function in_chunks(command, key, args)
  for from = 1, #args, 512 do
    if type(redis.pcall(command, key, unpack(args, from, math.min(from + 511, #args)))) ~= 'number' then return false end
  end
  return true
end
-- The delayed retries now due go back into their models' queues,
-- under their scores, the earliest first, at most delayMost a model (see
-- fair_queues): the rest go at the next claims. Before the queues are
-- read, so that a retry due starts at its tag's place.
local delayMost = 1024
-- The legacy queue and the record of the models with delayed retries
-- are usually gone (emptied since the upgrade; no retry waiting): one
-- EXISTS asks for both, and only when one is there is each asked on its
-- own (their ZCARD and ZRANGEBYSCORE: two calls where one was, then).
local rare = redis.call('EXISTS', KEYS[1], KEYS[1] .. ':dm') > 0
local dmodels = {}
if rare then
  dmodels = redis.pcall('ZRANGEBYSCORE', KEYS[1] .. ':dm', '-inf', snow)
  if dmodels.err then dmodels = {} end -- of another kind: none
end
for _, model in ipairs(dmodels) do
  local d, dt = KEYS[1] .. ':d:' .. model, KEYS[1] .. ':dt:' .. model
  local ids = redis.pcall('ZRANGEBYSCORE', dt, '-inf', snow, 'LIMIT', '0', int(delayMost))
  if not ids.err and #ids > 0 then
    local back = {}
    for _, id in ipairs(ids) do
      local sc = redis.pcall('ZSCORE', d, id)
      if type(sc) == 'string' then back[#back + 1], back[#back + 2] = sc, id end
    end
    if #back == 0 or in_chunks('ZADD', KEYS[1] .. ':m:' .. model, back) then -- a queue of another kind takes none: they stay
      in_chunks('ZREM', d, ids)
      in_chunks('ZREM', dt, ids)
      if #back > 0 then redis.pcall('SADD', KEYS[1] .. ':models', model) end
    end
  end
  delayed_head(KEYS[1], model)
end
local caps, rates = {}, {}
for i = 7, #ARGV, 3 do
  caps[ARGV[i]], rates[ARGV[i]] = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
end
local capped = kept_sets(KEYS[5])
-- track starts keeping the running sets named by field ('o', or
-- 'm:' .. model), with the tasks running now in them.
local function track(field)
  if capped[field] then return end
  capped[field] = true
  redis.call('HSET', KEYS[5], field, '1')
  local ids = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
  for j = 1, #ids, 2 do
    local task = skey(KEYS[1], 'task:' .. ids[j])
    local f = redis.call('HMGET', task, 'owner', 'model')
    if field == 'o' then
      redis.pcall('ZADD', skey(KEYS[1], 'run:o:' .. (f[1] or '')), ids[j + 1], ids[j])
      redis.call('HSET', task, 'ro', '1')
    elseif field == 'm:' .. (f[2] or '') then
      redis.pcall('ZADD', skey(KEYS[1], 'run:m:' .. (f[2] or '')), ids[j + 1], ids[j])
      redis.call('HSET', task, 'rm', '1')
    end
  end
end
if ownerCap > 0 then track('o') end
for model, cap in pairs(caps) do
  if cap > 0 then track('m:' .. model) end
end
local ownerRun, modelRun, modelNext = {}, {}, {} -- counts and next starts, as this claim goes
local function running(memo, key)
  local n = memo[key]
  if not n then
    n = redis.pcall('ZCOUNT', key, after_now, '+inf')
    if type(n) == 'table' then n = 0 end -- another kind: none
    memo[key] = n
  end
  return n
end
local function next_start(mkey)
  local t = modelNext[mkey]
  if not t then
    local f = redis.pcall('HMGET', mkey, 'next', 'pause')
    if f.err then f = {} end -- another kind: none
    local pause = tonumber(f[2]) or 0
    t = tonumber(f[1]) or 0
    if pause > now then t = -pause end -- negative: paused until -t
    modelNext[mkey] = t
  end
  return t
end
-- The keys of owners and models (and whether a model's running set is
-- kept), made once per claim: a concatenation makes a string each time.
local okeys, mkeys, rkeys, skeys, mkept = {}, {}, {}, {}, {}
local task_prefix = skey(KEYS[1], 'task:') -- finds store_tag
local function keyof(memo, prefix, name)
  local k = memo[name]
  if not k then
    k = store_tag .. ':' .. prefix .. name -- one concatenation, one string (skey's two make two)
    memo[name] = k
  end
  return k
end
local out, vtime, top = {}, nil, nil -- top: the score of the last task claimed, when the queues were read with scores
local claimed, leased, pend = {}, {}, {} -- ids, ZADD pairs of the leases (but the first's), sched key -> tasks claimed
local hooks -- ZADD pairs of the processing callbacks, made when there is one
-- model_held reports whether model may start no task now: paused, at
-- its cap, or waiting for its rate's next start (as this claim goes).
local function model_held(model)
  local cap, rate = caps[model] or 0, rates[model] or 0
  if cap > 0 and running(modelRun, keyof(mkeys, 'run:m:', model)) >= cap then return true end
  local t = next_start(keyof(rkeys, 'model:', model))
  return t < 0 or (rate > 0 and t > now)
end
-- The fair queues (see fair_queues): the legacy one if it holds tasks, and the queue of
-- each model that may start a task now. A model held back is decided
-- once, here, and its tasks are not read; one that reaches its cap or
-- its rate as the claim goes drops out of the merge (drop). Each queue
-- may pass over scan tasks held back for other reasons (not ready, the
-- first of an owner at its cap, a task hash missing or of another kind;
-- in the legacy queue, its model too), and drops out once it has passed
-- over more: a claim's work is bounded by the batch, scan tasks a queue
-- with pending tasks and the pending tasks of the owners at their cap,
-- whatever a held model's backlog. Each queue is read a
-- chunk at a time, from the first task not yet looked at (the tasks
-- passed over and claimed stay in it until the end), so that a claim
-- whose first tasks are free reads a few entries rather than scan of
-- them.
-- Parked owners (see fair_queues): of each model with some that may
-- start a task now, at most 64 are looked at, the least recently looked
-- at first (each is then scored now, so that the next claim looks at the
-- others first). The parked queue of one with a free slot (any, when
-- this claim has no owner cap) is merged; the others' are not read.
-- parkedOf[model] holds the owners looked at (true: merged) and, when
-- the model has more, its fair:pk key (see parked_owner).
-- Only a claim with an owner cap parks, and it keeps the owners'
-- running sets from then on (capped.o): a store whose claimers never
-- had one has no parked owners, and its claims do not ask.
local parkedOf, merged, pmodels = {}, {}, {}
if capped.o then
  pmodels = redis.pcall('SMEMBERS', KEYS[1] .. ':parked')
  if pmodels.err then pmodels = {} end -- of another kind: none
end
for _, model in ipairs(pmodels) do
  if not model_held(model) then
    local pk = KEYS[1] .. ':pk:' .. model
    local owners = redis.pcall('ZRANGE', pk, 0, 63)
    if owners.err then owners = {} end
    local seen, looked = {}, {}
    for _, owner in ipairs(owners) do
      local free = ownerCap == 0 or running(ownerRun, keyof(okeys, 'run:o:', owner)) < ownerCap
      seen[owner] = free
      looked[#looked + 1], looked[#looked + 2] = snow, owner
      if free then merged[#merged + 1] = {key = parked_key(KEYS[1], model, owner), model = model, owner = owner} end
    end
    if #looked > 0 then redis.pcall('ZADD', pk, 'XX', unpack(looked)) end
    parkedOf[model] = {seen = seen, more = #owners == 64 and pk}
  end
end
-- parked_owner reports whether owner, not looked at above, is parked in
-- the model of p (parkedOf's): only asked when the model has more than
-- were looked at.
local function parked_owner(p, owner)
  local v = p.seen[owner]
  if v == nil then
    v = false
    if p.more then
      local s = redis.pcall('ZSCORE', p.more, owner)
      v = type(s) == 'string' and 'parked'
    end
    p.seen[owner] = v
  end
  return v == 'parked'
end
local all = fair_queues(KEYS[1], 0, model_held, merged, not rare)
local queues, maxchunk = {}, want + scan + 1
for j, q in ipairs(all) do
  q.chunk, queues[j] = math.floor(want / #all) + 8, q
end
local atCap = {} -- the owners found at their cap (or parked: see below)
local topq, topid -- without scores, the queue and id of the last task claimed
-- drop reports whether q leaves the merge: it passed over more than
-- scan tasks, or parked parkMost, or moved delayMost aside (see
-- fair_queues), its model is held, or it is the
-- parked queue of an owner now at its cap. The tasks parked leave the
-- queue, so the next claim goes on from there: a backlog of owners at
-- their caps is parked over a few claims, each of bounded work, and
-- holds the tasks behind it back for those claims only.
local parkMost = 1024
local function drop(q)
  return q.passed - (q.uncounted or 0) > scan or (q.park and #q.park >= parkMost) or (q.delay and #q.delay >= delayMost) or
    (q.model and model_held(q.model)) or
    (q.owner and ownerCap > 0 and running(ownerRun, keyof(okeys, 'run:o:', q.owner)) >= ownerCap)
end
while #out < want do
  local q, id
  if #queues == 1 then -- one queue (the most usual): nothing to merge
    q = queues[1]
    if not drop(q) then id = queue_head(q, maxchunk) end
    if not id then break end
  else
    q, id = queue_first(queues, maxchunk, drop)
    if not q then break end
  end
  q.i = q.i + 1
  local task = task_prefix .. id
  -- What the claim decides on, then the rest of what a claimed task
  -- can hold (its request, cost, times, last error): one read.
  local f = redis.pcall('HMGET', task, 'status', 'run_after', 'owner', 'model', 'attempt', 'started', 'callback', 'events',
    'req', 'cost', 'created', 'rid', 'last_error', 'released', 'refunded')
  if f.err then f = {} end -- a task key of another kind: passed over, as a missing task
  local owner, model = f[3] or '', f[4] or ''
  local rkey = keyof(rkeys, 'model:', model)
  local rate = rates[model] or 0
  local waits = f[1] == 'pending' and f[2] and (tonumber(f[2]) or 0) > now -- run_after: only a retried task has one
  local held = f[1] ~= 'pending' or waits
  -- A retry waiting out its delay met in a model's queue is moved aside,
  -- uncounted (see fair_queues): more of them than scan at the head of
  -- the queue would hold back every other task of the model.
  local delay = waits and q.model and not q.owner
  local uncounted, park = delay, false
  -- An owner at its cap counts once against the look-ahead, however
  -- many of its tasks lie ahead of others' (its count only grows within
  -- the claim): its backlog, fallen behind the tags now served while its
  -- slow tasks hold its slots, holds no one back. A task of its met in a
  -- model's (or the legacy) queue is parked (see fair_queues), so that
  -- later claims do not read it again while the owner is at its cap; so
  -- is one of an owner parked in the model whose parked queue was not
  -- looked at (more owners were parked than a claim looks at), behind
  -- its older ones.
  if not held and ((ownerCap > 0 and running(ownerRun, keyof(okeys, 'run:o:', owner)) >= ownerCap) or
      (not q.owner and parkedOf[model] and parked_owner(parkedOf[model], owner))) then
    held, uncounted, park = true, atCap[owner], not q.owner
    atCap[owner] = true
  end
  -- A model queue's own model was judged just now, by drop: only a task
  -- of the legacy queue (or one whose hash names another model) is judged here.
  if not held and model ~= q.model and model_held(model) then held = true end
  if held then
    q.passed = q.passed + 1 -- every task passed over, counted or not: the queue is not empty
    if uncounted then q.uncounted = (q.uncounted or 0) + 1 end
    if delay then
      local dl = q.delay
      if not dl then
        dl = {}
        q.delay = dl
      end
      dl[#dl + 1] = {id, f[2], q.scores and q.sc[q.i - 1]}
    end
    if park then
      local pk = q.park
      if not pk then
        pk = {}
        q.park = pk
      end
      pk[#pk + 1] = {id, owner, model, q.scores and q.sc[q.i - 1]}
    end
    if f[1] ~= 'pending' then
      -- Not pending (a task key gone or of another kind, or a task
      -- that left pending without leaving this queue: cancelled by a
      -- process of a version before the model queues, whose dequeue
      -- knows only fair): an entry left behind, which no claim could
      -- take, taken out of the queue at the end, so that such entries
      -- do not pile up at the head and use up the queue's look-ahead.
      -- The earlier version's cancel left the owner's count of pending
      -- tasks as it was, too: it is taken down with the entry.
      local stale = q.stale
      if not stale then
        stale = {}
        q.stale = stale
      end
      stale[#stale + 1] = {id, f[3]}
    end
  else
    if #claimed == 0 then -- the claim's first write (see the comment above): the others' leases at the end
      redis.call('ZADD', KEYS[2], sleased, id)
    else
      leased[#leased + 1], leased[#leased + 2] = sleased, id
    end
    claimed[#claimed + 1] = id
    local taken = q.taken
    if not taken then
      taken = {}
      q.taken = taken
    end
    taken[#taken + 1] = id
    if q.scores then top = q.sc[q.i - 1] else topq, topid = q, id end
    local sched = keyof(skeys, 'sched:', owner)
    pend[sched] = (pend[sched] or 0) + 1
    local attempt = '1'
    if f[5] then attempt = int((numof(f[5]) or 0) + 1) end
    local rm = mkept[model]
    if rm == nil then
      rm = capped['m:' .. model] or false
      mkept[model] = rm
    end
    local ro = capped.o
    local sro, srm = ro and '1' or '0', rm and '1' or '0'
    local started = f[6]
    if started then
      redis.call('HSET', task, 'status', 'processing', 'attempt', attempt, 'lease_until', sleased, 'updated', snow, 'progress', '0', 'ro', sro, 'rm', srm, 'ct', ct)
    else -- its first claim: no progress recorded yet (none is 0)
      started = snow
      redis.call('HSET', task, 'status', 'processing', 'attempt', attempt, 'lease_until', sleased, 'updated', snow, 'started', snow, 'ro', sro, 'rm', srm, 'ct', ct)
      if wants_of(f[7], f[8], 'processing') then
        hooks = hooks or {}
        hooks[#hooks + 1], hooks[#hooks + 2] = snow, id .. ':processing' -- queued last: see the comment above
      end
    end
    if ro then
      local okey = keyof(okeys, 'run:o:', owner)
      redis.pcall('ZADD', okey, sleased, id)
      ownerRun[okey] = running(ownerRun, okey) + 1
    end
    if rm then
      local mkey = keyof(mkeys, 'run:m:', model)
      redis.pcall('ZADD', mkey, sleased, id)
      modelRun[mkey] = running(modelRun, mkey) + 1
    end
    if rate > 0 then
      local t = math.max(next_start(rkey), now) + math.floor(60000 / rate)
      modelNext[rkey] = t
      redis.pcall('HSET', rkey, 'next', int(t))
    end
    -- The task as claimed, in claimedFields' order: what the claim
    -- set and what was read above, joined by NULs into one string
    -- (Redis turns each value of a reply into its own bulk string, at
    -- several times the cost of the join; one concatenation is one
    -- string made). The last value, the last error, may hold NULs
    -- itself; a task whose other strings may hold one (its id, owner,
    -- model or request id: numbers never do, nor the request, JSON
    -- from encoding/json, which escapes control characters) comes as
    -- a list instead.
    local rid = f[12] or ''
    if string.find(id .. owner .. model .. rid, '\0', 1, true) then
      out[#out + 1] = {id, owner, model, attempt, sleased, snow, started, f[2] or '', f[9] or '', f[10] or '',
        f[11] or '', rid, f[14] or '', f[15] or '', f[13] or ''}
    else
      out[#out + 1] = id .. '\0' .. owner .. '\0' .. model .. '\0' .. attempt .. '\0' .. sleased .. '\0' .. snow ..
        '\0' .. started .. '\0' .. (f[2] or '') .. '\0' .. (f[9] or '') .. '\0' .. (f[10] or '') .. '\0' ..
        (f[11] or '') .. '\0' .. rid .. '\0' .. (f[14] or '') .. '\0' .. (f[15] or '') .. '\0' .. (f[13] or '')
    end
  end
end
if #claimed > 0 then -- out of the queues (dequeue, for the batch)
  -- The merge goes in order: the last task claimed has the largest
  -- tag of the claim (its score read once, when the queue was read
  -- without scores).
  top = top or redis.call('ZSCORE', topq.key, topid)
  vtime = numof(claim_vtime(top)) -- an infinite score (written by nothing of this version) moves nothing
  if #leased > 0 then redis.call('ZADD', KEYS[2], unpack(leased)) end -- first: a task processing is never left without its lease
  for _, q in ipairs(all) do
    if q.taken then redis.call('ZREM', q.key, unpack(q.taken)) end
  end
  redis.call('ZREM', skey(KEYS[1], 'pending'), unpack(claimed))
  for sched, n in pairs(pend) do -- pcalls: see next_tag
    redis.pcall('HINCRBY', sched, 'pend', n == 1 and '-1' or int(-n)) -- most often one task an owner: no format
  end
end
for _, q in ipairs(all) do -- the entries left behind (see stale above); pcall: a queue of another kind reads as empty
  for _, e in ipairs(q.stale or {}) do
    if redis.pcall('ZREM', q.key, e[1]) == 1 and e[2] then
      redis.pcall('HINCRBY', keyof(skeys, 'sched:', e[2]), 'pend', '-1')
    end
  end
end
-- The tasks parked (see fair_queues) move to their owners' parked
-- queues, out of the queue they were in (a parked queue of another kind
-- takes none: its tasks stay where they were), in chunks (unpack's
-- limit). A parked queue that the claim emptied is no longer parked.
for _, q in ipairs(all) do
  if q.park then
    local into, order = {}, {}
    for _, e in ipairs(q.park) do
      local pq = parked_key(KEYS[1], e[3], e[2])
      local t = into[pq]
      if not t then
        t = {owner = e[2], model = e[3], args = {}}
        into[pq], order[#order + 1] = t, pq
      end
      local a = t.args
      a[#a + 1], a[#a + 2] = e[4] or redis.call('ZSCORE', q.key, e[1]), e[1]
    end
    for _, pq in ipairs(order) do
      local t = into[pq]
      if in_chunks('ZADD', pq, t.args) then
        in_chunks('ZADD', KEYS[1] .. ':pa:' .. t.model, t.args)
        redis.pcall('ZADD', KEYS[1] .. ':pk:' .. t.model, 'NX', snow, t.owner)
        redis.pcall('SADD', KEYS[1] .. ':parked', t.model)
        local ids = {}
        for k = 2, #t.args, 2 do ids[#ids + 1] = t.args[k] end
        in_chunks('ZREM', q.key, ids)
      end
    end
  end
  if q.delay then -- the retries met waiting move aside (see fair_queues), in chunks
    local byScore, byTime, ids = {}, {}, {}
    for _, e in ipairs(q.delay) do
      local sc = e[3] or redis.pcall('ZSCORE', q.key, e[1])
      if type(sc) == 'string' then
        byScore[#byScore + 1], byScore[#byScore + 2] = sc, e[1]
        byTime[#byTime + 1], byTime[#byTime + 2] = e[2], e[1]
        ids[#ids + 1] = e[1]
      end
    end
    local d = KEYS[1] .. ':d:' .. q.model
    if #ids > 0 and in_chunks('ZADD', d, byScore) then
      if in_chunks('ZADD', KEYS[1] .. ':dt:' .. q.model, byTime) then
        in_chunks('ZREM', q.key, ids)
        delayed_head(KEYS[1], q.model)
      else -- of another kind: they stay in the queue
        in_chunks('ZREM', d, ids)
      end
    end
  end
  if q.owner and (q.taken or q.stale or (not q.more and q.i > #q.ids)) then -- read to its end: maybe empty
    local gone = {}
    for _, id in ipairs(q.taken or {}) do gone[#gone + 1] = id end
    for _, e in ipairs(q.stale or {}) do gone[#gone + 1] = e[1] end
    parked_left(KEYS[1], q.key, q.model, q.owner, gone)
  end
end
-- A model whose queue the claim found empty, or emptied (read to its
-- end, every task claimed), leaves the record of the models with one.
local gone
for _, q in ipairs(all) do
  if q.model and not q.owner and not q.more and q.i > #q.ids and q.passed == 0 then
    gone = gone or {}
    gone[#gone + 1] = q.model
  end
end
if gone then redis.pcall('SREM', KEYS[1] .. ':models', unpack(gone)) end
if vtime then
  local cur = numof(read_string(KEYS[4])) -- not a (finite) number, or not a string: written over
  if not cur then -- this version's first claim: vtag starts from vtime (see claim_vtime)
    cur, vtime = -1, math.max(vtime, numof(read_string(KEYS[6])) or 0)
  end
  if vtime > cur then
    local s = whole(vtime)
    -- vtime too, for processes of the earlier version, which read it: a
    -- key a claim can stop writing once no such process is left to run.
    -- One MSET, where two SETs made two calls (it sets each key as SET
    -- does; both share the store's hash tag).
    redis.call('MSET', KEYS[4], s, KEYS[6], s)
  end
end
if hooks then redis.call('ZADD', KEYS[3], unpack(hooks)) end
return out
`)

// ClaimTask leases the next ready pending task in fair-share order.
func (s *Store) ClaimTask(ctx context.Context, lease time.Duration) (*imagegen.Task, error) {
	return leases.First(s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 1}))
}

// ClaimTasks leases up to p.N ready pending tasks in fair-share order,
// passing over those p.Limits holds back, in one script. A store of
// several shards goes round them, from a shard further on at each call,
// until it has p.N tasks or has asked every shard: fair share and the
// limits then hold within each shard (an owner's tasks are all in one
// shard, so an owner's concurrency cap is exact; a model's cap and rate
// apply to each shard on its own). A claim whose reply was lost and
// that go-redis sent again answers with the tasks its first run claimed
// (see sendMark), so that none is left processing with no worker; so
// does a claim the store asks again once go-redis has given up (see
// claimShard).
//
// A claimed task it cannot read (see claimShard) is failed and refunded
// (storekit.FailUnreadable) and reported in an
// *imagegen.UnreadableTasksError returned with the tasks it could read,
// which are claimed all the same. A shard whose claim fails after
// earlier shards gave tasks ends the round: the tasks are returned with
// an *imagegen.PartialClaimError naming the shard (joined with the
// unreadable tasks' error when there is one), not dropped, nor is the
// error.
func (s *Store) ClaimTasks(ctx context.Context, p imagegen.ClaimParams) ([]*imagegen.Task, error) {
	n := min(max(p.N, 1), 64)
	var tasks []*imagegen.Task
	var unreadable []imagegen.UnreadableTask
	var partial error
	start := int(s.next.Add(1))
	for i := range s.shards {
		sh := s.shards[(start+i)%len(s.shards)]
		got, bad, err := s.claimShard(ctx, sh, p, n-len(tasks))
		tasks, unreadable = append(tasks, got...), append(unreadable, bad...)
		if err != nil && len(tasks) == 0 && len(unreadable) == 0 {
			return nil, err
		}
		if err != nil {
			partial = &imagegen.PartialClaimError{Part: "shard " + sh.tag, Err: err}
			break
		}
		if len(tasks) == n {
			break
		}
	}
	err := errors.Join(storekit.FailUnreadable(ctx, s.FailTask, unreadable), partial)
	if err == nil && len(tasks) == 0 {
		return nil, imagegen.ErrNoTask
	}
	return tasks, err
}

// claimShard runs claimScript on one shard for up to n tasks. The script
// has leased every task of its reply, so a task it cannot read (a field
// that does not decode: corrupted in Redis, or written by something
// else) does not cost the others their claim: the tasks it could read
// are returned, and that one in bad, for ClaimTasks to fail. Dropping
// the batch left the others leased to no one until their leases ran
// out, an attempt used up each time the bad task came back with them.
// err is for the script's call only.
//
// A call that fails in a way that leaves unknown whether the script ran
// (its reply lost with the connection, after go-redis's own sends again
// were used up: see claimRanMaybe) is asked again, with the same
// arguments and token, as go-redis's next send would have been, up to
// claimAsksAgain times while ctx lasts: written after the first, the
// token is marked as sent again (sendMark), so a script whose first run
// claimed tasks answers with them rather than claiming others. Else
// those tasks stayed leased to no worker until their leases ran out,
// an attempt used up.
func (s *Store) claimShard(ctx context.Context, sh keys, p imagegen.ClaimParams, n int) (tasks []*imagegen.Task, bad []imagegen.UnreadableTask, err error) {
	token := newSendMark()
	args := append(make([]any, 0, 6+3*len(p.Limits.ModelConcurrency)+3*len(p.Limits.ModelRate)),
		s.nowArg(), ms(p.Lease), n, p.Limits.OwnerConcurrency, imagegen.ClaimScan, token)
	args = appendModelLimits(args, p.Limits)
	keys := []string{sh.fair(), sh.leases(), sh.webhooks(), sh.vtag(), sh.capped(), sh.vtime()}
	cmd := runScript(ctx, s.rdb, claimScript, keys, args...)
	for asked := 0; asked < claimAsksAgain && claimRanMaybe(ctx, cmd.Err()); asked++ {
		cmd = runScript(ctx, s.rdb, claimScript, keys, args...)
	}
	reply, err := cmd.Slice()
	if err != nil {
		return nil, nil, fmt.Errorf("redis store: claim: %w", err)
	}
	tasks = make([]*imagegen.Task, 0, len(reply))
	for _, r := range reply {
		f, err := claimedHash(r)
		if err != nil {
			bad = append(bad, imagegen.UnreadableTask{Err: err})
			continue
		}
		t, err := decodeTask(f)
		if err != nil {
			bad = append(bad, imagegen.UnreadableTask{ID: f["id"], Model: f["model"], Attempt: int(atoi(f["attempt"])), Err: err})
			continue
		}
		tasks = append(tasks, t)
	}
	return tasks, bad, nil
}

// claimAsksAgain is how many times claimShard asks a shard again when
// its claim's answer may have been lost (each ask with go-redis's own
// sends again, and their pauses).
const claimAsksAgain = 2

// claimRanMaybe reports whether a claim's error leaves unknown whether
// its script ran, and ctx lets it be asked again: any error but an
// answer from Redis (a script's error, such as a key of the wrong kind,
// or a refusal such as LOADING: what the call did is known), a client
// closed, or ctx's end. A call that never reached Redis (a connection
// that could not be made) is among them: asked again, it finds no task
// of its token and claims as any other (see sendMark).
func claimRanMaybe(ctx context.Context, err error) bool {
	var answer goredis.Error
	return err != nil && ctx.Err() == nil && !errors.As(err, &answer) && !errors.Is(err, goredis.ErrClosed)
}

// claimedFields name the values claimScript returns for a task: the
// fields of its hash that decodeTask reads and a claimed task can have
// (the status is processing, the progress 0).
// The last error is last: only it may hold a NUL in a joined reply.
var claimedFields = [...]string{"id", "owner", "model", "attempt", "lease_until", "updated", "started", "run_after",
	"req", "cost", "created", "rid", "released", "refunded", "last_error"}

// claimedHash turns one task of claimScript's reply into the fields of
// its hash, as decodeTask reads them.
func claimedHash(reply any) (map[string]string, error) {
	m := make(map[string]string, len(claimedFields)+2)
	switch r := reply.(type) {
	case string:
		values := strings.SplitN(r, "\x00", len(claimedFields))
		if len(values) != len(claimedFields) {
			return nil, fmt.Errorf("redis store: claim: unexpected reply of %d values", len(values))
		}
		for i, v := range values {
			if v != "" {
				m[claimedFields[i]] = v
			}
		}
	case []any:
		if len(r) != len(claimedFields) {
			return nil, fmt.Errorf("redis store: claim: unexpected reply of %d values", len(r))
		}
		for i, v := range r {
			if s, _ := v.(string); s != "" {
				m[claimedFields[i]] = s
			}
		}
	default:
		return nil, fmt.Errorf("redis store: claim: unexpected reply %T", reply)
	}
	m["status"], m["progress"] = string(imagegen.StatusProcessing), "0"
	return m, nil
}

// appendModelLimits appends, for each model l names, its name, cap and
// rate (0 for none), as claimScript and statsScript read them.
func appendModelLimits(args []any, l imagegen.Limits) []any {
	for model, c := range l.ModelConcurrency {
		args = append(args, model, c, l.ModelRate[model])
	}
	for model, r := range l.ModelRate {
		if _, ok := l.ModelConcurrency[model]; !ok {
			args = append(args, model, 0, r)
		}
	}
	return args
}

// renewScript extends the lease of its holder while it runs. A lease
// that has ended (lease_until <= now) is not renewed: its task no longer
// counts against the caps (their running sets count a lease until its
// end), and another task may have taken its slot.
//
//	KEYS[1] task  KEYS[2] leases
//	ARGV[1] now   ARGV[2] attempt  ARGV[3] lease (ms)  ARGV[4] id
//
// Returns 1, or 0 when attempt does not hold the lease or it has ended.
var renewScript = newScript(`
local now = now_ms()
local h = holds(KEYS[1], ARGV[2], 'lease_until')
if not h or (tonumber(h[7]) or 0) <= now then return 0 end
local untilMS = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'lease_until', untilMS, 'updated', now)
redis.call('ZADD', KEYS[2], untilMS, ARGV[4])
run_until(KEYS[1], ARGV[4], untilMS)
return 1
`)

// RenewLease extends the lease of the holder of attempt.
func (s *Store) RenewLease(ctx context.Context, id string, attempt int, lease time.Duration) error {
	return s.runHolder(ctx, renewScript, id, attempt,
		[]string{s.byID(id).task(id), s.byID(id).leases()}, ms(lease), id)
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
	return s.runHolder(ctx, progressScript, id, attempt, []string{s.byID(id).task(id)},
		strconv.FormatFloat(progress, 'f', -1, 64))
}

// retryScript gives a task back to the queue, ready after a delay. As
// a failure does, it leaves its call's token on the task (field cx,
// finish_mark with nothing refunded), so that a run sent again after its
// reply was lost finds the task given back by its own call and answers
// as the first run did, not 0 (lease lost); the check is made only when
// attempt does not hold the lease.
//
// A queue the task goes back into that holds a value of another kind
// (see takes_enqueue) fails the retry before its first write: the task
// stays processing with its lease, and once the key is mended the
// lease's recovery gives it back. Else the retry took it out of the
// leases, set it pending, then failed in enqueue: pending in no queue
// and with no lease, never claimed nor recovered.
//
//	KEYS[1] task  KEYS[2] leases  KEYS[3] pending
//	ARGV[1] now   ARGV[2] attempt  ARGV[3] delay (ms)  ARGV[4] last error  ARGV[5] id
//	ARGV[6] the call's token (random)
//
// Returns 1, 0 when attempt does not hold the lease, or -1 (nothing
// changed) when a queue cannot take the task.
var retryScript = newScript(`
local now = now_ms()
local h = holds(KEYS[1], ARGV[2])
if not h then return resent_finish(redis.call('HGET', KEYS[1], 'cx'), ARGV[6]) and 1 or 0 end
if not give_back(KEYS[1], ARGV[5], KEYS[2], h, now + tonumber(ARGV[3]), now, ARGV[4], ARGV[6]) then return -1 end
return 1
`)

// RetryTask gives the task back to the queue, ready after delay.
func (s *Store) RetryTask(ctx context.Context, id string, attempt int, delay time.Duration, lastErr string) error {
	return s.runHolder(ctx, retryScript, id, attempt,
		[]string{s.byID(id).task(id), s.byID(id).leases(), s.byID(id).pending()}, ms(delay), lastErr, id, callToken())
}

// releaseScript gives a task back to the queue, ready now, without
// counting the attempt (released grows by one). Like retryScript, it
// leaves its call's token (cx) for a run sent again, and fails before
// its first write, changing nothing, when a queue the task goes back
// into holds a value of another kind.
//
//	KEYS[1] task  KEYS[2] leases  KEYS[3] pending
//	ARGV[1] now   ARGV[2] attempt  ARGV[3] last error  ARGV[4] id
//	ARGV[5] the call's token (random)
//
// Returns 1, 0 when attempt does not hold the lease, or -1 (nothing
// changed) when a queue cannot take the task.
var releaseScript = newScript(`
local now = now_ms()
local h = holds(KEYS[1], ARGV[2])
if not h then return resent_finish(redis.call('HGET', KEYS[1], 'cx'), ARGV[5]) and 1 or 0 end
if not give_back(KEYS[1], ARGV[4], KEYS[2], h, now, now, ARGV[3], ARGV[5]) then return -1 end
redis.call('HINCRBY', KEYS[1], 'released', 1)
return 1
`)

// ReleaseTask gives the task back to the queue, ready now, without
// counting the attempt.
func (s *Store) ReleaseTask(ctx context.Context, id string, attempt int) error {
	return s.runHolder(ctx, releaseScript, id, attempt,
		[]string{s.byID(id).task(id), s.byID(id).leases(), s.byID(id).pending()}, storekit.ReleasedMessage, id, callToken())
}

// runHolder runs a script whose ARGV are now, attempt, then args, and
// that answers 0 when attempt does not hold the lease (and, for one
// that gives the task back to the queue, -1 when a queue cannot take
// it: errQueueKeys).
func (s *Store) runHolder(ctx context.Context, script *goredis.Script, id string, attempt int, keys []string, args ...any) error {
	n, err := s.ackedScript(ctx, script, keys, s.holderArgs(attempt, args)...).Int64()
	if err == nil && n == -1 {
		err = errQueueKeys
	}
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
// A task to fail whose refund cannot be written (its owner's balance or
// ledger holds a value of another kind, or the balance would overflow)
// is left processing, its lease end a minute later: nothing is credited
// without its ledger entry and its mark, and the other leases are
// recovered. So is a task to requeue that a queue it goes back into
// cannot take (one of another kind: see takes_enqueue), asked before
// anything of it is written: else the script took it out of the leases,
// set it pending, then failed in enqueue, leaving it in no queue and
// with no lease (never claimed nor recovered), and the rest of the
// batch not recovered. Those are counted, for RecoverExpired to report.
//
// Returns {requeued, expired leases seen, left for a queue, failed...},
// each failed task as {id, owner, model, request id, attempts, cost,
// refund} (strings; refund is the cost, or 0 when the task had been
// refunded before).
var recoverScript = newScript(`
local now = now_ms()
local retention = tonumber(ARGV[2])
local maxAttempts = tonumber(ARGV[3])
local unrefundable_retry = 60000 -- ms
local out = {0, 0, 0}
local seen = {} -- takes_enqueue's answers, by key
-- leave_for_later pushes a task's lease end a minute later, as the task
-- shows it too: behind the other leases, not before them at every run.
local function leave_for_later(task, id)
  local retry = int(now + unrefundable_retry)
  redis.call('ZADD', KEYS[1], retry, id)
  redis.call('HSET', task, 'lease_until', retry)
end
for i = 1, (#KEYS - 3) / 3 do
  local task, balance, ledger, id = KEYS[3 * i + 1], KEYS[3 * i + 2], KEYS[3 * i + 3], ARGV[3 + i]
  local leaseEnd = redis.call('ZSCORE', KEYS[1], id)
  if leaseEnd and tonumber(leaseEnd) <= now then
    out[2] = out[2] + 1
    local f = redis.call('HMGET', task, 'status', 'attempt', 'released', 'owner', 'model', 'rid', 'cost', 'refunded', 'ro', 'rm')
    local counted = (tonumber(f[2]) or 0) - (tonumber(f[3]) or 0) -- released claims do not count
    if f[1] ~= 'processing' then
      redis.call('ZREM', KEYS[1], id) -- left behind; nothing to recover
    elseif counted >= maxAttempts then
      local cost = f[7] or '0'
      local refunded = '0'
      if f[8] ~= '1' then refunded = cost end
      if refund(task, balance, ledger, id, now) then
        finish(task, KEYS[1], id, 'failed', now, retention, KEYS[3], nil,
          'error', 'image generation did not finish (' .. counted .. ' attempts)', 'error_code', 'internal')
        out[#out + 1] = {id, f[4] or '', f[5] or '', f[6] or '', tostring(counted), cost, refunded}
      else -- its owner's credit keys cannot take the refund: left as it is, tried again later
        leave_for_later(task, id)
      end
    elseif not takes_enqueue(task, f[5] or '', seen) then -- a queue cannot take it: left as it is, tried again later
      leave_for_later(task, id)
      out[3] = out[3] + 1
    else
      redis.call('ZREM', KEYS[1], id)
      stop_running(task, id, f[9], f[10], f[4], f[5])
      redis.call('HSET', task, 'status', 'pending', 'lease_until', 0, 'run_after', now,
        'updated', now, 'last_error', 'lease expired')
      enqueue(task, id, now, f[4], f[5])
      out[1] = out[1] + 1
    end
  end
end
return out
`)

// RecoverExpired sends tasks whose lease ended back to pending, or fails
// and refunds them after maxAttempts, and reports them. Each batch reads
// the oldest leases and their owners, then runs one script that checks
// and moves them. Tasks that a queue of another kind cannot take back
// are left processing, their lease a minute later (see recoverScript):
// the rest are recovered, and the call answers what it recovered with
// an error (errQueueKeys) that counts them, as it will at each run until
// the key is mended.
func (s *Store) RecoverExpired(ctx context.Context, maxAttempts int) (imagegen.Recovery, error) {
	var rec imagegen.Recovery
	left := 0
	for _, sh := range s.shards {
		if err := s.recoverShard(ctx, sh, maxAttempts, &rec, &left); err != nil {
			return rec, err
		}
	}
	if left > 0 {
		return rec, fmt.Errorf("redis store: recover: %d tasks whose lease ended left processing, their lease a minute later: %w", left, errQueueKeys)
	}
	return rec, nil
}

// recoverShard is RecoverExpired on one shard; it adds to left the tasks
// a queue could not take back.
func (s *Store) recoverShard(ctx context.Context, sh keys, maxAttempts int, rec *imagegen.Recovery, left *int) error {
	for {
		ids, err := s.rdb.ZRange(ctx, sh.leases(), 0, recoverBatch-1).Result()
		if err != nil || len(ids) == 0 {
			return wrapErr("recover", err)
		}
		owners := make([]string, len(ids))
		pipe := s.rdb.Pipeline()
		cmds := make([]interface{ Val() string }, len(ids))
		for i, id := range ids {
			cmds[i] = pipe.HGet(ctx, sh.task(id), "owner")
		}
		if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
			return wrapErr("recover", err)
		}
		keys := []string{sh.leases(), sh.pending(), sh.webhooks()}
		args := []any{s.nowArg(), ms(s.retention), strconv.Itoa(maxAttempts)}
		for i, id := range ids {
			owners[i] = cmds[i].Val()
			keys = append(keys, sh.task(id), sh.balance(owners[i]), sh.ledger(owners[i]))
			args = append(args, id)
		}
		reply, err := s.ackedScript(ctx, recoverScript, keys, args...).Slice() // acknowledged: a task failed is refunded
		if err != nil {
			return wrapErr("recover", err)
		}
		seen, err := addRecovery(rec, reply, left)
		if err != nil {
			return err
		}
		if seen < len(ids) || len(ids) < recoverBatch {
			return nil // the rest of the leases are still valid
		}
	}
}

// addRecovery adds recoverScript's reply to rec, and to left the tasks a
// queue could not take back, and returns how many expired leases the
// script saw.
func addRecovery(rec *imagegen.Recovery, reply []any, left *int) (int, error) {
	if len(reply) < 3 {
		return 0, fmt.Errorf("redis store: recover: unexpected script reply of %d values", len(reply))
	}
	requeued, _ := reply[0].(int64)
	seen, _ := reply[1].(int64)
	kept, _ := reply[2].(int64)
	rec.Requeued += int(requeued)
	*left += int(kept)
	for _, r := range reply[3:] {
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
