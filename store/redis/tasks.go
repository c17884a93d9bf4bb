package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/groupcommit"
	"github.com/imagegen/imagegen/store/storekit"
)

// createScript creates a batch of tasks: for each, it debits the cost,
// appends the charge and stores the task as pending, or changes nothing
// for that task when its owner's balance is short or its owner already
// has the pending tasks its max allows. Each task is checked and
// charged on its own, in order, so a batch is exactly as if its tasks
// had been submitted one after another. It is the hot path, so it makes
// as few calls and takes as few arguments as it can: each owner's
// balance is debited its tasks' cost in one DECRBY (and given back what
// refused tasks did not spend), its scheduling state is read once and
// written back once, ledger entries and task index entries are appended
// in one call each per owner, and one ZADD per queue queues the batch
// (one per model's queue, and one SADD notes the models that have one:
// see fair_queues in the prelude; one more indexes it for operators).
// Each owner's keys are named
// once, however many of the batch's tasks are the owner's, and so is
// each spec: what tasks share but their request (model, cost, max
// pending, callback), usually one for the whole batch.
//
// Each task gets its fair-share tag (see next_tag in the prelude): its
// owner's stride after base, the larger of its owner's last tag (while
// the owner has pending tasks) and queue_base: the largest tag claimed
// (vtag), or, when the head of the task's model's queue is behind that
// (the model held back while others ran), one less than the tag at the
// head. The head is read once a model a batch (one ZRANGE, before the
// batch queues anything), and each of the batch's tasks is tagged from
// it, as if the tasks had been submitted one after another, each seeing
// the queue with the batch's earlier tasks in it: those give base
// nothing new, since a task queued behind a head behind vtag is tagged
// at or after the head (base is at least head - 1, the stride at least
// 1), and one queued while the queue is empty or not behind vtag is
// tagged after vtag; so the lowest tag in the queue is behind vtag
// after a task is queued exactly when it was before, and is the same
// tag when it is. (vtag, written by claims only, stays as read.)
//
// An owner's task index outlives its last task by at least ARGV[2] (the
// retention and a day) and at most ARGV[3] (that and indexMargin): its
// TTL is pushed out to ARGV[3] only once less than ARGV[2] is left, as
// its sched hash's ixp says, so that most batches skip the PEXPIRE.
//
//	KEYS[1] pending  KEYS[2] the index of all tasks
//	KEYS[3] fair (the legacy queue, not written: the models' queues, fair:m:<model> (their heads read, then written), and fair:models are named from it)
//	KEYS[4] vtag  KEYS[5] tseq
//	KEYS[4o+2 .. 4o+5]  owner o (1-based): balance, ledger, task index, sched
//	then per task its task key
//	ARGV[1] now  ARGV[2] how long an owner's task index outlives its last task at least (ms)
//	ARGV[3] the TTL an owner's task index is given when it is pushed out (ms)
//	ARGV[4] how many owners  ARGV[5] how many specs
//	ARGV[6] per task two bytes: its owner's number and its spec's number
//	then per owner: its name, the cost of its tasks in the batch
//	then per spec: model, cost, max pending (0: no max), callback URL or
//	"", callback events ("" for the default), the charge's ledger
//	reference as JSON ("" for "task:<id>", which needs no escaping)
//	then per task: id, request JSON, request id or ""
//	last: the batch's token, "f" and the token, or "a" and the token when the batch is sent again (see sendMark)
//
// Returns {now, codes, balance_1, ..., balance_o}: codes holds a byte a
// task, 'c' (created), 'r' (created and charged by an earlier run of
// this very batch, whose reply was lost: go-redis sends a run again
// when its connection breaks, and the submit is answered as made, not
// as an id taken; only a run marked as sent again answers it, and only
// for a task that holds the batch's token (field mk, which each task
// the batch makes keeps), so that a submit that reuses the id of a
// task made before, by another batch, is refused as taken, as the
// other stores refuse it, sent again or not), 's' (balance short),
// 't' (id taken), 'f' (queue full) or 'e' (its owner's keys could not
// be read or written: nothing
// of its owner's tasks is kept, and the other owners' go on; also a task
// whose id an undone task had taken); balance_o is owner o's balance
// before the batch (0 when its keys could not be read), from
// which each task's balance follows (see createResults). When one of
// the store-wide queues cannot be written, nothing of the batch is kept
// and every code is 'w'. A reply of a
// few values, not two a task, and a task's numbers as two bytes of one
// argument, not two arguments, spare the server a conversion each.
//
// The batch's ids are checked with one EXISTS of all its task keys;
// only when one is taken is each checked on its own (and an id sent
// twice in the batch is caught by the ids the batch made).
var createScript = newScript(`
local now = now_ms()
local snow, stamp = int(now), string.format('%013d', now) .. ':' -- index members: stamp .. id
local out, codes, queued, indexed = {now, ''}, {}, {}, {}
-- fair: by model, the ZADD arguments of its queue (fair:m:<model>, named
-- from KEYS[3]); qmodels: the models, in order of their first task.
local fair, qmodels = {}, {}
-- Numbers are read from strings by arithmetic (s + 0), not tonumber,
-- which in Lua 5.1 converts a string twice.
local owners, keep = ARGV[4] + 0, ARGV[2] + 0
-- An owner's index whose expiry (ixp, ms) is before due is pushed out,
-- and so is one whose expiry is later than a push now would set
-- (written under a longer retention: the index may have gone and been
-- made again since, with no TTL), or that is not a number.
local due, far = now + keep, now + ARGV[3]
-- again reports whether task, which exists, is this very submit's,
-- made by an earlier run of this batch whose reply was lost (a
-- connection that broke after Redis ran it, and go-redis sent the run
-- again): the run is marked as sent again, and the task holds the
-- batch's token (mk, as the first run wrote it). A task of the same id
-- made by the same batch is not (made); nor is a task of a run sent
-- once, nor one that another batch made (a submit that reuses its id).
local mark = ARGV[#ARGV]
local resent = string.byte(mark) == 97 -- "a"
mark = 'f' .. string.sub(mark, 2) -- as the first run wrote it
local function again(task)
  return redis.call('HGET', task, 'mk') == mark
end
-- Specs by number.
local specs, a = {}, 7 + 2 * owners
for j = 1, ARGV[5] + 0 do
  specs[j] = {model = ARGV[a], scost = ARGV[a + 1], cost = ARGV[a + 1] + 0, max = ARGV[a + 2] + 0,
    callback = ARGV[a + 3], events = ARGV[a + 4], ref = ARGV[a + 5]}
  a = a + 6
end
-- By owner number, read before anything is written: balance, ledger
-- entries and index members to add, scheduling state (stride, last,
-- pend; pend0 as read) and its index's expiry.
local order = {}
for on = 1, owners do
  local k = 4 * on + 1
  local f = redis.pcall('HMGET', KEYS[k + 4], 'w', 'last', 'pend', 'ixp')
  if f.err then
    order[on] = {k = k, bad = true}
  else
    -- numof, not arithmetic: a value that is not a number (or not a
    -- finite one) reads as none (as next_tag reads it), and is written
    -- over below.
    local pend = numof(f[3]) or 0
    order[on] = {k = k, owner = ARGV[5 + 2 * on], cost = ARGV[6 + 2 * on], entries = {}, members = {},
      stride = stride(f[1]), last = numof(f[2]) or 0, pend = pend, pend0 = pend, ixp = numof(f[4]), read = f}
  end
end
local vtime = read_vtag(KEYS[4])
-- give_back returns to acct's balance what the batch debited and did not
-- spend (cost - spent: small whole numbers, exact, where value - left,
-- doubles of the balance, lost the difference above 2^53 and kept a
-- refused task's cost); an owner that had no balance key (one is never
-- made without a ledger entry) is left without one.
local function give_back(acct)
  local back = acct.cost - acct.spent
  if back == 0 then return end
  if #acct.entries == 0 and acct.value == 0 and redis.call('EXISTS', KEYS[acct.k + 2]) == 0 then
    redis.call('DEL', KEYS[acct.k + 1])
  else
    redis.call('INCRBY', KEYS[acct.k + 1], int(back))
  end
end
-- plus is s, the decimal digits of a whole number of any size, plus k,
-- a small whole number (at most a batch's cost), written exactly: the
-- balances above 2^53, where a double cannot hold every integer, are
-- reported and written into charges from the balance read back as a
-- string (see balance_after).
local function plus(s, k)
  local digits, carry = {}, k
  for i = #s, 1, -1 do
    local d = string.byte(s, i) - 48 + carry
    digits[i] = d % 10
    carry = (d - d % 10) / 10
  end
  if carry > 0 then return int(carry) .. table.concat(digits) end
  return table.concat(digits)
end
-- balance_after is acct's balance once it has spent spent of its debit,
-- as a string of its integer: int(value) while the balance is below
-- 2^52, else from the exact balance after the whole debit (lstr).
local function balance_after(acct, spent)
  if not acct.lstr then return int(acct.left + acct.cost - spent) end
  return plus(acct.lstr, acct.cost - spent)
end
-- Each balance is debited all its owner's tasks' cost at once (one call
-- where a GET and a SET were); what refused tasks did not spend goes
-- back at the end. This is the script's first write. An owner whose
-- keys hold values of the wrong kind (its scheduling state or balance
-- here, its ledger or task index below: a script that fails keeps what
-- it wrote, so these calls are pcalls) is bad: its tasks get 'e' and
-- nothing of the batch is left of them, and the other owners' go on.
local tasks = 5 + 4 * owners -- the task keys follow
local n = #KEYS - tasks
local seq = redis.call('INCRBY', KEYS[5], int(n)) -- before the debits: a plain call that could fail
for _, acct in ipairs(order) do
  if not acct.bad then
    local left = redis.pcall('DECRBY', KEYS[acct.k + 1], acct.cost)
    if type(left) == 'table' then
      acct.bad = true
    else
      acct.left, acct.value, acct.spent = left, left + acct.cost, 0
      if left >= 4503599627370496 then acct.lstr = redis.call('GET', KEYS[acct.k + 1]) end -- 2^52: see balance_after
    end
  end
  if acct.bad then out[#out + 1] = 0 else out[#out + 1] = balance_after(acct, 0) end
end
-- taken: some id was taken before the batch, so each is looked up;
-- else made holds the ids the batch made.
local taken, made = redis.call('EXISTS', unpack(KEYS, tasks + 1)) > 0, {}
local nums, a0 = ARGV[6], a -- a0: the first task's arguments
for i = 1, n do
  local task = KEYS[tasks + i]
  local on, sn = string.byte(nums, 2 * i - 1, 2 * i)
  local id, sp, acct = ARGV[a], specs[sn], order[on]
  local exists
  if taken then exists = redis.call('EXISTS', task) == 1 else exists = made[task] end
  if acct.bad then
    codes[i] = 'e'
  elseif exists and resent and not made[task] and again(task) then
    codes[i] = 'r'
  elseif exists then
    codes[i] = 't'
  elseif acct.value < sp.cost then
    codes[i] = 's'
  elseif sp.max > 0 and acct.pend >= sp.max then
    codes[i] = 'f'
  else
    made[task] = true
    acct.value, acct.spent = acct.value - sp.cost, acct.spent + sp.cost
    local ref = sp.ref
    if ref == '' then ref = '"task:' .. id .. '"' end
    acct.entries[#acct.entries + 1] = '{"kind":"charge","amount":-' .. sp.scost .. ',"ref":' .. ref .. ',"at":' .. snow .. ',"bal":' .. balance_after(acct, acct.spent) .. '}'
    local owner, callback, events, rid = acct.owner, sp.callback, sp.events, ARGV[a + 2]
    if callback == '' and events == '' then -- one HSET either way: a call costs more than a field
      if rid == '' then
        redis.call('HSET', task, 'id', id, 'owner', owner, 'req', ARGV[a + 1], 'model', sp.model,
          'cost', sp.scost, 'status', 'pending', 'created', snow, 'mk', mark)
      else
        redis.call('HSET', task, 'id', id, 'owner', owner, 'req', ARGV[a + 1], 'model', sp.model,
          'cost', sp.scost, 'status', 'pending', 'created', snow, 'mk', mark, 'rid', rid)
      end
    else
      local h = {task, 'id', id, 'owner', owner, 'req', ARGV[a + 1], 'model', sp.model,
        'cost', sp.scost, 'status', 'pending', 'created', snow, 'mk', mark}
      if callback ~= '' then h[#h + 1], h[#h + 2] = 'callback', callback end
      if events ~= '' then h[#h + 1], h[#h + 2] = 'events', events end
      if rid ~= '' then h[#h + 1], h[#h + 2] = 'rid', rid end
      redis.call('HSET', unpack(h))
    end
    local q = sp.q -- its model's queue's arguments, found once a spec
    if not q then
      q = fair[sp.model]
      if not q then
        -- base: what the model's tasks are tagged from (but for their
        -- owners' last tags), from the head of its queue read once a
        -- model: see the comment on createScript.
        q = {base = queue_base(vtime, queue_head_tag(KEYS[3] .. ':m:' .. sp.model))}
        fair[sp.model], qmodels[#qmodels + 1] = q, sp.model
      end
      sp.q = q
    end
    local base = q.base
    if acct.pend > 0 then base = math.max(base, acct.last) end
    acct.last = base + acct.stride
    acct.pend = acct.pend + 1
    queued[#queued + 1], queued[#queued + 2] = snow, id
    q[#q + 1], q[#q + 2] = tag_score(acct.last, (seq - n + i) % 1024), id
    local member = stamp .. id
    acct.members[#acct.members + 1], acct.members[#acct.members + 2] = '0', member
    indexed[#indexed + 1], indexed[#indexed + 2] = '0', member
    codes[i] = 'c'
  end
  a = a + 3
end
-- undo takes back what the batch did for acct, whose ledger (pushed 0)
-- or task index (pushed: the entries its ledger got) could not be
-- written: the entries, the charges, the tasks made; all its tasks get
-- 'e' (those refused were refused on charges now taken back), and so
-- does a later task whose id one of them had taken in the batch. The
-- ids of the tasks taken back go in undone (returned) so that the
-- queues skip them.
local function undo(acct, pushed, undone)
  undone = undone or {}
  if pushed > 0 then redis.call('LTRIM', KEYS[acct.k + 2], 0, -pushed - 1) end
  redis.call('INCRBY', KEYS[acct.k + 1], int(acct.spent))
  acct.bad = true
  local gone = {}
  for i = 1, n do
    if order[string.byte(nums, 2 * i - 1)] == acct then
      if codes[i] == 'c' then
        redis.call('DEL', KEYS[tasks + i])
        gone[KEYS[tasks + i]] = true
        undone[ARGV[a0 + 3 * (i - 1)]] = true
      end
      codes[i] = 'e'
    elseif codes[i] == 't' and gone[KEYS[tasks + i]] then
      codes[i] = 'e'
    end
  end
  return undone
end
local undone
for _, acct in ipairs(order) do
  local ixp, k = nil, acct.k
  if not acct.bad then give_back(acct) end
  if not acct.bad and #acct.entries > 0 then
    if type(redis.pcall('RPUSH', KEYS[k + 2], unpack(acct.entries))) == 'table' then
      undone = undo(acct, 0, undone)
    elseif type(redis.pcall('ZADD', KEYS[k + 3], unpack(acct.members))) == 'table' then
      undone = undo(acct, #acct.entries, undone)
    elseif not acct.ixp or acct.ixp < due or acct.ixp > far then
      redis.call('PEXPIRE', KEYS[k + 3], ARGV[3])
      ixp = int(far)
    end
  end
  if acct.bad then -- its scheduling state stays as it was
  elseif ixp then -- tasks were made: pend changed too
    redis.call('HSET', KEYS[k + 4], 'last', whole(acct.last), 'pend', int(acct.pend), 'ixp', ixp)
  elseif acct.pend ~= acct.pend0 then
    redis.call('HSET', KEYS[k + 4], 'last', whole(acct.last), 'pend', int(acct.pend))
  end
end
if undone then -- the queue entries of undone tasks (id from character from of the member)
  local function drop(list, from)
    local kept = {}
    for j = 1, #list, 2 do
      if not undone[string.sub(list[j + 1], from)] then kept[#kept + 1], kept[#kept + 2] = list[j], list[j + 1] end
    end
    return kept
  end
  queued, indexed = drop(queued, 1), drop(indexed, #stamp + 1)
  for _, m in ipairs(qmodels) do fair[m] = drop(fair[m], 1) end
end
-- members lists the members of a ZADD's arguments (score, member, ...).
local function members(list)
  local m = {}
  for j = 2, #list, 2 do m[#m + 1] = list[j] end
  return m
end
-- take_back_all undoes what the batch wrote: the store-wide queues
-- written (pairs {key, ZADD arguments}), and of each owner that made
-- tasks its index entries, its scheduling state as it was read, its
-- ledger entries, charges and tasks (undo).
local function take_back_all(written)
  for _, w in ipairs(written) do redis.pcall('ZREM', w[1], unpack(members(w[2]))) end
  for _, acct in ipairs(order) do
    if not acct.bad and #acct.entries > 0 then
      local k, f = acct.k, acct.read
      redis.pcall('ZREM', KEYS[k + 3], unpack(members(acct.members)))
      for j, field in ipairs({'last', 'pend', 'ixp'}) do
        if f[j + 1] then redis.pcall('HSET', KEYS[k + 4], field, f[j + 1]) else redis.pcall('HDEL', KEYS[k + 4], field) end
      end
      undo(acct, #acct.entries)
    end
  end
end
-- The store-wide queues are written last. One that holds a value of the
-- wrong kind (which only something other than the store writes) takes
-- the whole batch back (take_back_all): every submit fails, as every
-- later one will until the key is mended, and none is charged or kept.
-- pcalls cost nothing more than calls when they succeed.
if #queued > 0 then
  local written, failed = {}, false -- those written (before the one that failed)
  if type(redis.pcall('ZADD', KEYS[1], unpack(queued))) == 'table' then
    failed = true
  else
    written[1] = {KEYS[1], queued}
    -- One ZADD a model's queue, and the models in fair:models in one
    -- SADD (see fair_queues).
    local names = {}
    for _, m in ipairs(qmodels) do
      local q = fair[m]
      if #q > 0 then
        local key = KEYS[3] .. ':m:' .. m
        if type(redis.pcall('ZADD', key, unpack(q))) == 'table' then
          failed = true
          break
        end
        written[#written + 1], names[#names + 1] = {key, q}, m
      end
    end
    if not failed and #names > 0 and type(redis.pcall('SADD', KEYS[3] .. ':models', unpack(names))) == 'table' then
      failed = true
    end
    if not failed and type(redis.pcall('ZADD', KEYS[2], unpack(indexed))) == 'table' then
      failed = true
    end
  end
  if failed then
    take_back_all(written)
    out[2] = string.rep('w', n)
    return out
  end
  if math.floor(seq / 64) ~= math.floor((seq - n) / 64) then -- trimmed once every 64 queueings
    redis.call('ZREMRANGEBYLEX', KEYS[2], '-', '(' .. string.format('%013d', now - keep))
  end
end
out[2] = table.concat(codes)
return out
`)

// CreateTask debits t.Cost and stores t as pending, atomically, in one
// round trip. Concurrent calls share round trips (group commit: at most
// maxInFlight script runs of at most maxBatch submits at once). A
// submit whose owner has a key that holds a value of the wrong kind
// (written by something other than the store) fails and leaves nothing
// behind, and the submits that share its round trip go on as if it were
// not there. A submit whose script run reached Redis but whose reply
// was lost (go-redis sends the run again when its connection breaks)
// is answered as made, charged once: the run sent again finds the task
// of this id made by its own batch (each task keeps its batch's token),
// and takes it for its own. A submit that reuses the id of a task made
// by another batch, of any owner and request, is refused as the id
// taken, whether or not its run was sent again. A submit whose run got
// no reply at all (every send's connection cut, a read timeout, the
// caller gone) fails with an error wrapping imagegen.ErrOutcomeUnknown:
// the run may still be on its way to the server, and run after a
// lookup found nothing, so an idempotent submit keeps its key in flight
// and settles it later. One whose run was answered but too few replicas
// confirmed (ErrNotReplicated) did run: its error does not wrap
// ErrOutcomeUnknown, and a lookup finds the task.
func (s *Store) CreateTask(ctx context.Context, t *imagegen.Task, p imagegen.CreateParams) (int64, error) {
	args, err := s.createArgsOf(t, p)
	if err != nil {
		return 0, err
	}
	res, err := s.creates.Do(ctx, args)
	switch {
	case err != nil:
		return 0, err
	case res.code == 0:
		return res.balance, imagegen.ErrInsufficientCredits
	case res.code == -2:
		return 0, fmt.Errorf("redis store: owner's pending tasks at the max: %w", imagegen.ErrQueueFull)
	case res.code == -3:
		return 0, fmt.Errorf("redis store: create task: %w", errOwnerKeys)
	case res.code == -4:
		return 0, fmt.Errorf("redis store: create task: %w", errStoreKeys)
	case res.code < 0: // -1: the id is taken (its task exists)
		return 0, fmt.Errorf("redis store: task %q exists: %w", t.ID, imagegen.ErrDuplicateEntry)
	}
	now := fromMS(res.now)
	t.Status, t.Attempt = imagegen.StatusPending, 0
	t.CreatedAt, t.UpdatedAt, t.RunAfter = now, now, now
	return res.balance, nil
}

// indexMargin is how much longer than the retention and a day an
// owner's task index may outlive its last task: createScript pushes the
// index's expiry out once per margin, not at every batch. At most half
// the retention, so that the task of the batch that last pushed it out
// is still there, and its entry holds the index, until the next one
// does: an index emptied (by ListTasks dropping the entries of tasks
// that are gone) and made again would have no TTL.
func indexMargin(retention time.Duration) time.Duration { return min(time.Hour, retention/2) }

// maxBatch bounds how many submits share one script run. A batch names
// each task's owner and spec by a byte (createScript's ARGV[6]): at most
// 255 of either.
const maxBatch = 64

var _ [255 - maxBatch]struct{} // maxBatch < 256

// maxInFlight is how many batches may be in flight at once: while Redis
// runs one, the next ones are on their way, so the server never waits
// for us. With 32 concurrent submitters on loopback (bench/), 1 gave
// about 21 µs a submit, 2 swung between 12 and 19 µs from run to run,
// and 3 or 4 held at 12 to 16 µs. Submits also gather (the batcher's
// Gather: the submitters a batch answered queue again before the next
// batch goes): in four alternating runs of the bench's 32 submitters,
// 20.5-22 µs of Redis CPU a submit against 22-26.5 without, and 33-44
// µs a submit against 36-57.
const maxInFlight = 4

// minBehind: a batch of fewer submits (or key reads) than this waits
// while another is in flight, until that one ends, more come, or
// groupcommit's DefaultHoldMax (1 ms) passes (groupcommit's MinBehind;
// the rate limiter's batches do the same). A script run's fixed cost is
// about three tasks' (createScript: some 240k server instructions a run,
// 72k a task), and under moderate concurrency four batches in flight
// went as runs of two or three submits each. Measured against the
// commit before it, alternating, three rounds each (2-core Intel Xeon):
// HTTP submits through serve (BenchmarkServerCPU/redis, 30 owners, 32
// clients) 55-57 µs of Redis CPU a task for the submit phase against
// 60-64, 114-121 µs a task in all against 124; the bench module's 64
// submitters 14.0-17.2 µs a submit against 18.1-21.9 (Redis CPU 14-16
// µs against 16.5-19.5); its pipeline 19.2k-19.7k tasks/s against
// 18.9k-19.4k. A quarter of a batch: in a first version of the hold,
// half a batch (32) split the 64 submitters into one batch in flight and
// one held behind it, so that Redis waited for the Go side between them
// (21.9-27.1 µs a submit), and 8 was no better than no hold.
const minBehind = maxBatch / 4

// maxCompletesInFlight is how many runs of the complete script may be in
// flight at once on a store of one shard (a sharded store keeps
// maxInFlight: see New). A worker's slot is free again before its success is stored, so
// a success's latency does not hold generation back, and one run at a
// time makes the batches larger: the bench's Redis pipeline (20000 tasks,
// five alternating runs) did 8.6k tasks/s against 7.4k with four in
// flight (medians), in 25.0k script runs against 31.2k.
const maxCompletesInFlight = 1

// createArgsOf checks t and makes its submit's keys and arguments.
func (s *Store) createArgsOf(t *imagegen.Task, p imagegen.CreateParams) (createArgs, error) {
	if err := storekit.CheckNewTask(t); err != nil {
		return createArgs{}, err
	}
	req, err := json.Marshal(t.Request)
	if err != nil {
		return createArgs{}, fmt.Errorf("redis store: encode request: %w", err)
	}
	var ref []byte // nil: "task:<id>" as the script writes it
	if !plainJSON(t.ID) {
		if ref, err = json.Marshal(imagegen.ChargeRef(t.ID)); err != nil {
			return createArgs{}, fmt.Errorf("redis store: encode reference: %w", err)
		}
	}
	sh := s.byOwner(t.Owner)
	if !s.idPlaced(t.ID) || s.byID(t.ID).tag != sh.tag {
		return createArgs{}, fmt.Errorf("redis store: %w: on a store of several shards a task's id must carry its owner's mark (imagegen.NewOwnedID); %q does not", storekit.ErrInvalidStoreInput, t.ID)
	}
	return createArgs{
		shard: sh,
		owner: t.Owner,
		id:    t.ID,
		task:  sh.task(t.ID),
		spec: createSpec{model: t.Model, cost: t.Cost, maxPending: max(p.MaxPending, 0),
			callback: t.Request.CallbackURL, events: storekit.EventsField(t.Request.CallbackEvents), ref: string(ref)},
		req: req,
		rid: t.RequestID,
	}, nil
}

// createArgs are one submit's keys and arguments of createScript.
type createArgs struct {
	shard     keys // of the owner
	owner, id string
	task      string // the task's key
	spec      createSpec
	req       []byte // the request, JSON
	rid       string // the request id, or ""
}

// createSpec is what a submit's task may share with other submits'
// tasks, in the order of createScript's arguments: a batch names each
// spec once.
type createSpec struct {
	model      string
	cost       int64
	maxPending int
	callback   string
	events     string
	ref        string // the charge's reference as JSON when "task:<id>" needs escaping, else ""
}

// errOwnerKeys: a submit's owner has a key that holds a value of the
// wrong kind (which only something other than the store writes) or a
// balance the debit would take out of range.
var errOwnerKeys = errors.New("the owner's balance, ledger, task index or scheduling state in Redis could not be read or written (a value of the wrong kind, or a balance out of range); nothing was charged or kept")

// errStoreKeys: one of the store's queues (pending, a model's fair
// queue or fair:models, the operators' index) holds a value of the wrong kind, which only
// something other than the store writes: every submit fails until it is
// mended.
var errStoreKeys = errors.New("the store's queues in Redis could not be written (a value of the wrong kind); nothing was charged or kept")

// createResult is one submit's result: its code and balance, and the
// time of the batch.
type createResult struct{ code, balance, now int64 }

type createCall = groupcommit.Call[createArgs, createResult]

// runCreates runs createScript for a batch and hands each call its
// result: one run per shard the batch's owners live in, at once.
func (s *Store) runCreates(ctx context.Context, batch []*createCall) {
	if !s.sharded {
		s.runShardCreates(ctx, s.shards[0], batch)
		return
	}
	byShard := map[string][]*createCall{}
	for _, c := range batch {
		byShard[c.Req.shard.tag] = append(byShard[c.Req.shard.tag], c)
	}
	if len(byShard) == 1 {
		s.runShardCreates(ctx, batch[0].Req.shard, batch)
		return
	}
	var wg sync.WaitGroup
	for _, calls := range byShard {
		wg.Go(func() { s.runShardCreates(ctx, calls[0].Req.shard, calls) })
	}
	wg.Wait()
}

// numberDistinct returns the distinct values of key over batch, in order
// of their first call, and each call's value's number among them, from 1.
func numberDistinct[T comparable](batch []*createCall, key func(*createCall) T) (distinct []T, number []int) {
	number = make([]int, len(batch))
	for i, c := range batch {
		v := key(c)
		number[i] = slices.Index(distinct, v) + 1
		if number[i] == 0 {
			distinct = append(distinct, v)
			number[i] = len(distinct)
		}
	}
	return distinct, number
}

// runShardCreates runs createScript for calls of one shard.
func (s *Store) runShardCreates(ctx context.Context, sh keys, batch []*createCall) {
	// The batch's owners and specs, each named once, in order of their
	// first task; number and spec are each call's.
	owners, number := numberDistinct(batch, func(c *createCall) string { return c.Req.owner })
	specs, spec := numberDistinct(batch, func(c *createCall) createSpec { return c.Req.spec })
	costs := make([]int64, len(owners)) // each owner's tasks' cost in the batch
	for i, c := range batch {
		costs[number[i]-1] += c.Req.spec.cost
	}
	keys := make([]string, 0, 5+4*len(owners)+len(batch))
	args := make([]any, 0, 7+2*len(owners)+6*len(specs)+3*len(batch))
	keys = append(keys, sh.pending(), sh.allTasks(), sh.fair(), sh.vtag(), sh.tseq())
	keep := s.retention + 24*time.Hour
	nums := make([]byte, 0, 2*len(batch)) // each task's owner and spec number, a byte each (maxBatch < 256)
	for i := range batch {
		nums = append(nums, byte(number[i]), byte(spec[i]))
	}
	args = append(args, s.nowArg(), ms(keep), ms(keep+indexMargin(s.retention)), len(owners), len(specs), nums)
	for i, o := range owners {
		args = append(args, o, costs[i])
	}
	for _, p := range specs {
		args = append(args, p.model, p.cost, p.maxPending, p.callback, p.events, p.ref)
	}
	for _, o := range owners {
		keys = append(keys, sh.balance(o), sh.ledger(o), sh.ownerTasks(o), sh.sched(o))
	}
	for _, c := range batch {
		keys = append(keys, c.Req.task)
		args = append(args, c.Req.id, c.Req.req, c.Req.rid)
	}
	args = append(args, newSendMark()) // written "a" when the batch is sent again
	cmd := s.ackedScript(ctx, createScript, keys, args...)
	reply, err := cmd.Slice()
	switch {
	case err == nil:
		err = createResults(batch, number, len(owners), reply)
	case cmd.Val() == nil && (networkErr(err) || ctxErr(err) != nil):
		// No reply was read: the run may have been written and not
		// run yet (its bytes in the network, or in the server's socket
		// buffer), so it may still run after a lookup on another
		// connection found nothing. A run whose reply was read and
		// whose WAIT failed (ErrNotReplicated, or WAIT's connection)
		// has run: a lookup finds what it made.
		err = fmt.Errorf("%w (no reply: the batch may still run: %w)", err, imagegen.ErrOutcomeUnknown)
	}
	if err != nil {
		for _, c := range batch {
			c.Err = fmt.Errorf("redis store: create task: %w", err)
		}
	}
}

// createResults hands each call of batch its result from createScript's
// reply ({now, codes, each owner's balance before the batch}): a
// created task's balance is its owner's after its charge, a refused
// one's as it was then, and a taken id's 0, as CreateTask reports them.
// number is each call's owner's number, from 1.
func createResults(batch []*createCall, number []int, owners int, reply []any) error {
	if len(reply) != 2+owners {
		return fmt.Errorf("unexpected reply of %d values for %d owners", len(reply), owners)
	}
	now, ok0 := reply[0].(int64)
	codes, ok1 := reply[1].(string)
	if !ok0 || !ok1 || len(codes) != len(batch) {
		return fmt.Errorf("unexpected reply %v for %d tasks", reply[:2], len(batch))
	}
	balances := make([]int64, owners)
	for o := range balances {
		b, err := replyInt(reply[2+o]) // a string above 2^52, which a Lua number cannot hold exactly
		if err != nil {
			return fmt.Errorf("unexpected balance %v in the reply", reply[2+o])
		}
		balances[o] = b
	}
	for i, c := range batch {
		bal := &balances[number[i]-1]
		res := createResult{balance: *bal, now: now}
		switch codes[i] {
		case 'c':
			*bal -= c.Req.spec.cost
			res.code, res.balance = 1, *bal
		case 'r': // made by the run whose reply was lost: charged then, in the balance before the batch
			res.code = 1
		case 's':
			res.code = 0
		case 'f':
			res.code = -2
		case 't':
			res.code, res.balance = -1, 0
		case 'e':
			res.code, res.balance = -3, 0
		case 'w':
			res.code, res.balance = -4, 0
		default:
			return fmt.Errorf("unexpected code %q in the reply", codes[i])
		}
		c.Res = res
	}
	return nil
}

// Task returns owner's task.
func (s *Store) Task(ctx context.Context, owner, id string) (*imagegen.Task, error) {
	f, err := s.liveHash(ctx, s.byID(id).task(id), "task", imagegen.ErrTaskNotFound)
	if err != nil {
		return nil, err
	}
	if f["owner"] != owner {
		return nil, imagegen.ErrTaskNotFound
	}
	t, err := decodeTask(f)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// positionsScript answers each task's place in claim order: the tasks
// before it in its own fair queue (ZRANK) and, in each other queue of
// the shard (the legacy one, the models' in fair:models, each model's
// parked tasks, fair:pa:<model>, and its delayed retries, fair:d:<model>:
// see fair_queues), those of a
// lower score (ZCOUNT), so at most one command a queue, however long
// the queues and however many owners are parked. A task that is not pending in a
// queue answers -1. (Tasks of one score in two queues, which only a tie
// of tag and queueing count mod 1024 makes, share a place.)
//
//	KEYS[1] fair (the legacy queue; the models' queues and fair:models are named from it)
//	ARGV[i] the ids
//
// Returns the places, in the ids' order.
var positionsScript = newScript(`
local names = redis.pcall('SMEMBERS', KEYS[1] .. ':models')
if names.err then names = {} end
local queues = {KEYS[1]}
for _, m in ipairs(names) do queues[#queues + 1] = KEYS[1] .. ':m:' .. m end
for _, p in ipairs(parked_sets(KEYS[1])) do queues[#queues + 1] = p.key end
local out, task_prefix = {}, skey(KEYS[1], 'task:')
for i, id in ipairs(ARGV) do
  local f = redis.pcall('HMGET', task_prefix .. id, 'model', 'owner')
  if f.err then f = {} end
  local own, score
  if f[1] then
    own = KEYS[1] .. ':m:' .. f[1]
    score = redis.pcall('ZSCORE', own, id)
    if type(score) ~= 'string' then
      own = KEYS[1] .. ':d:' .. f[1]
      score = redis.pcall('ZSCORE', own, id)
    end
    if type(score) ~= 'string' then
      own = KEYS[1] .. ':pa:' .. f[1]
      score = redis.pcall('ZSCORE', own, id)
    end
  end
  if type(score) ~= 'string' then
    own = KEYS[1]
    score = redis.pcall('ZSCORE', own, id)
  end
  if type(score) ~= 'string' then
    out[i] = -1
  else
    local n = redis.call('ZRANK', own, id)
    for _, q in ipairs(queues) do
      if q ~= own then
        local c = redis.pcall('ZCOUNT', q, '-inf', '(' .. score)
        if type(c) == 'number' then n = n + c end
      end
    end
    out[i] = n
  end
end
return out
`)

// QueuePositions answers each task's place in claim order
// (positionsScript), one script run a shard the ids are in.
func (s *Store) QueuePositions(ctx context.Context, ids []string) ([]int, error) {
	out := make([]int, len(ids))
	byShard := map[string][]int{} // shard tag → the places in ids of its ids
	var tags []string
	for i, id := range ids {
		tag := s.byID(id).tag
		if _, ok := byShard[tag]; !ok {
			tags = append(tags, tag)
		}
		byShard[tag] = append(byShard[tag], i)
	}
	for _, tag := range tags {
		places := byShard[tag]
		args := make([]any, len(places))
		for j, i := range places {
			args[j] = ids[i]
		}
		reply, err := positionsScript.Run(ctx, s.rdb, []string{keys{tag: tag}.fair()}, args...).Slice()
		if err != nil {
			return nil, wrapErr("queue positions", err)
		}
		if len(reply) != len(places) {
			return nil, fmt.Errorf("redis store: queue positions: unexpected reply of %d values for %d tasks", len(reply), len(places))
		}
		for j, i := range places {
			n, err := replyInt(reply[j])
			if err != nil {
				return nil, fmt.Errorf("redis store: queue positions: unexpected reply %v", reply[j])
			}
			out[i] = int(n)
		}
	}
	return out, nil
}
