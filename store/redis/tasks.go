package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

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
// as few calls as it can: balances and owners' scheduling state are
// read once per owner and written back once, ledger entries (half-made
// in Go) and task index entries are appended in one call each per
// owner, and one ZADD per queue queues the batch (and one more indexes
// it for operators). Each owner's keys are named once, however many of
// the batch's tasks are the owner's.
//
// Each task gets its fair-share tag (see next_tag in the prelude): after
// its owner's last while the owner has pending tasks, else after the
// largest tag claimed.
//
//	KEYS[1] pending  KEYS[2] the index of all tasks  KEYS[3] fair  KEYS[4] vtime  KEYS[5] tseq
//	KEYS[4o+2 .. 4o+5]  owner o (1-based): balance, ledger, task index, sched
//	then per task its task key
//	ARGV[1] now  ARGV[2] how long an owner's task index outlives its last task (ms)
//	ARGV[3] how many owners  ARGV[3+o] owner o
//	then per task: id, its owner's number o, request JSON, model, cost,
//	ledger entry JSON up to its time, callback URL or "", callback
//	events ("" for the default), request id or "", max pending (0: no
//	max)
//
// Returns {code_1, balance_1, ..., code_n, balance_n, now} where code is
// 1 (created), 0 (balance short), -1 (id taken) or -2 (queue full).
var createScript = newScript(`
local now = now_ms()
local snow, stamp = int(now), string.format('%013d', now) .. ':' -- index members: stamp .. id
local out, queued, fair, indexed = {}, {}, {}, {}
local owners = tonumber(ARGV[3])
-- By owner number (as sent: a string), read on its first task: balance,
-- ledger entries and index members to add, scheduling state (w, last,
-- pend; pend0 as read).
local accts, order = {}, {}
local vtime = tonumber(redis.call('GET', KEYS[4]) or '0')
local tasks = 5 + 4 * owners -- the task keys follow
local n = #KEYS - tasks
local seq = redis.call('INCRBY', KEYS[5], int(n))
for i = 1, n do
  local task = KEYS[tasks + i]
  local a = 3 + owners + 10 * i - 9
  local id, o, cost, maxPending = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 4]), 0
  if ARGV[a + 9] ~= '0' then maxPending = tonumber(ARGV[a + 9]) end
  local acct = accts[o]
  if not acct then
    local k = 4 * tonumber(o) + 1
    local f = redis.call('HMGET', KEYS[k + 4], 'w', 'last', 'pend')
    local pend = tonumber(f[3]) or 0
    acct = {k = k, owner = ARGV[3 + tonumber(o)], value = tonumber(redis.call('GET', KEYS[k + 1]) or '0'), entries = {}, members = {},
      w = f[1], last = tonumber(f[2]) or 0, pend = pend, pend0 = pend}
    accts[o] = acct
    order[#order + 1] = acct
  end
  if redis.call('EXISTS', task) == 1 then
    out[#out + 1], out[#out + 2] = -1, 0
  elseif acct.value < cost then
    out[#out + 1], out[#out + 2] = 0, acct.value
  elseif maxPending > 0 and acct.pend >= maxPending then
    out[#out + 1], out[#out + 2] = -2, acct.value
  else
    acct.value = acct.value - cost
    acct.entries[#acct.entries + 1] = ARGV[a + 5] .. snow .. ',"bal":' .. int(acct.value) .. '}'
    local owner, callback, events, rid = acct.owner, ARGV[a + 6], ARGV[a + 7], ARGV[a + 8]
    if callback == '' and events == '' then -- one HSET either way: a call costs more than a field
      if rid == '' then
        redis.call('HSET', task, 'id', id, 'owner', owner, 'req', ARGV[a + 2], 'model', ARGV[a + 3],
          'cost', ARGV[a + 4], 'status', 'pending', 'created', snow)
      else
        redis.call('HSET', task, 'id', id, 'owner', owner, 'req', ARGV[a + 2], 'model', ARGV[a + 3],
          'cost', ARGV[a + 4], 'status', 'pending', 'created', snow, 'rid', rid)
      end
    else
      local h = {task, 'id', id, 'owner', owner, 'req', ARGV[a + 2], 'model', ARGV[a + 3],
        'cost', ARGV[a + 4], 'status', 'pending', 'created', snow}
      if callback ~= '' then h[#h + 1], h[#h + 2] = 'callback', callback end
      if events ~= '' then h[#h + 1], h[#h + 2] = 'events', events end
      if rid ~= '' then h[#h + 1], h[#h + 2] = 'rid', rid end
      redis.call('HSET', unpack(h))
    end
    local base = vtime
    if acct.pend > 0 then base = math.max(base, acct.last) end
    acct.last = base + stride(acct.w)
    acct.pend = acct.pend + 1
    queued[#queued + 1], queued[#queued + 2] = snow, id
    fair[#fair + 1], fair[#fair + 2] = tag_score(acct.last, (seq - n + i) % 1024), id
    local member = stamp .. id
    acct.members[#acct.members + 1], acct.members[#acct.members + 2] = '0', member
    indexed[#indexed + 1], indexed[#indexed + 2] = '0', member
    out[#out + 1], out[#out + 2] = 1, acct.value
  end
end
for _, acct in ipairs(order) do
  if #acct.entries > 0 then
    local k = acct.k
    redis.call('SET', KEYS[k + 1], int(acct.value))
    redis.call('RPUSH', KEYS[k + 2], unpack(acct.entries))
    redis.call('ZADD', KEYS[k + 3], unpack(acct.members))
    redis.call('PEXPIRE', KEYS[k + 3], ARGV[2])
  end
  if acct.pend ~= acct.pend0 then
    redis.call('HSET', KEYS[acct.k + 4], 'last', num(acct.last), 'pend', int(acct.pend))
  end
end
if #queued > 0 then
  redis.call('ZADD', KEYS[1], unpack(queued))
  redis.call('ZADD', KEYS[3], unpack(fair))
  redis.call('ZADD', KEYS[2], unpack(indexed))
  if math.floor(seq / 64) ~= math.floor((seq - n) / 64) then -- trimmed once every 64 queueings
    redis.call('ZREMRANGEBYLEX', KEYS[2], '-', '(' .. string.format('%013d', now - tonumber(ARGV[2])))
  end
end
out[#out + 1] = now
return out
`)

// CreateTask debits t.Cost and stores t as pending, atomically, in one
// round trip. Concurrent calls share round trips (group commit: at most
// maxInFlight script runs of at most maxBatch submits at once).
func (s *Store) CreateTask(ctx context.Context, t *imagegen.Task, p imagegen.CreateParams) (int64, error) {
	if err := storekit.CheckNewTask(t); err != nil {
		return 0, err
	}
	req, err := json.Marshal(t.Request)
	if err != nil {
		return 0, fmt.Errorf("redis store: encode request: %w", err)
	}
	ref, err := json.Marshal(imagegen.ChargeRef(t.ID))
	if err != nil {
		return 0, fmt.Errorf("redis store: encode reference: %w", err)
	}
	sh := s.byOwner(t.Owner)
	if !s.idPlaced(t.ID) || s.byID(t.ID).tag != sh.tag {
		return 0, fmt.Errorf("redis store: %w: on a store of several shards a task's id must carry its owner's mark (imagegen.NewOwnedID); %q does not", storekit.ErrInvalidStoreInput, t.ID)
	}
	res, err := s.creates.Do(ctx, createArgs{
		shard:     sh,
		owner:     t.Owner,
		task:      sh.task(t.ID),
		ownerKeys: [4]string{sh.balance(t.Owner), sh.ledger(t.Owner), sh.ownerTasks(t.Owner), sh.sched(t.Owner)},
		args: [8]any{req, t.Model, t.Cost, `{"kind":"charge","amount":` + strconv.FormatInt(-t.Cost, 10) + `,"ref":` + string(ref) + `,"at":`,
			t.Request.CallbackURL, storekit.EventsField(t.Request.CallbackEvents), t.RequestID, max(p.MaxPending, 0)},
		id: t.ID,
	})
	switch {
	case err != nil:
		return 0, err
	case res.code == 0:
		return res.balance, imagegen.ErrInsufficientCredits
	case res.code == -2:
		return 0, fmt.Errorf("redis store: owner's pending tasks at the max: %w", imagegen.ErrQueueFull)
	case res.code < 0:
		return 0, fmt.Errorf("redis store: task %q exists", t.ID)
	}
	now := fromMS(res.now)
	t.Status, t.Attempt = imagegen.StatusPending, 0
	t.CreatedAt, t.UpdatedAt, t.RunAfter = now, now, now
	return res.balance, nil
}

// maxBatch bounds how many submits share one script run.
const maxBatch = 64

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

// maxCompletesInFlight is how many runs of the complete script may be in
// flight at once on a store of one shard (a sharded store keeps
// maxInFlight: see New). A worker's slot is free again before its success is stored, so
// a success's latency does not hold generation back, and one run at a
// time makes the batches larger: the bench's Redis pipeline (20000 tasks,
// five alternating runs) did 8.6k tasks/s against 7.4k with four in
// flight (medians), in 25.0k script runs against 31.2k.
const maxCompletesInFlight = 1

// createArgs are one submit's keys and arguments of createScript.
type createArgs struct {
	shard     keys // of the owner
	owner, id string
	task      string    // the task's key
	ownerKeys [4]string // its owner's balance, ledger, task index and sched
	args      [8]any    // the task's arguments after its id and owner number
}

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

// runShardCreates runs createScript for calls of one shard.
func (s *Store) runShardCreates(ctx context.Context, sh keys, batch []*createCall) {
	// The batch's owners, in order of their first task, each named once.
	var owners []string
	number := make([]int, len(batch)) // each call's owner's number, from 1
	for i, c := range batch {
		number[i] = slices.Index(owners, c.Req.owner) + 1
		if number[i] == 0 {
			owners = append(owners, c.Req.owner)
			number[i] = len(owners)
		}
	}
	keys := make([]string, 0, 5+4*len(owners)+len(batch))
	args := make([]any, 0, 3+len(owners)+10*len(batch))
	keys = append(keys, sh.pending(), sh.allTasks(), sh.fair(), sh.vtime(), sh.tseq())
	args = append(args, s.nowArg(), ms(s.retention+24*time.Hour), len(owners))
	for _, o := range owners {
		args = append(args, o)
	}
	named := 0
	for i, c := range batch {
		if number[i] > named { // its owner's first task: the owner's keys
			keys = append(keys, c.Req.ownerKeys[:]...)
			named++
		}
	}
	for i, c := range batch {
		keys = append(keys, c.Req.task)
		args = append(args, c.Req.id, number[i])
		args = append(args, c.Req.args[:]...)
	}
	res, err := s.ackedScript(ctx, createScript, keys, args...).Int64Slice()
	if err == nil && len(res) != 2*len(batch)+1 {
		err = fmt.Errorf("unexpected reply of %d values for %d tasks", len(res), len(batch))
	}
	for i, c := range batch {
		if err != nil {
			c.Err = fmt.Errorf("redis store: create task: %w", err)
		} else {
			c.Res = createResult{code: res[2*i], balance: res[2*i+1], now: res[len(res)-1]}
		}
	}
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
	return decodeTask(f)
}

// QueuePositions asks the fair queue for each task's rank (ZRANK, in
// claim order: its tag), in one pipelined round trip.
func (s *Store) QueuePositions(ctx context.Context, ids []string) ([]int, error) {
	out := make([]int, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cmds := make([]*goredis.IntCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.ZRank(ctx, s.byID(id).fair(), id)
		}
		return nil
	})
	if err != nil && !isNil(err) {
		return nil, wrapErr("queue positions", err)
	}
	for i, c := range cmds {
		n, err := c.Result()
		switch {
		case isNil(err):
			out[i] = -1
		case err != nil:
			return nil, wrapErr("queue positions", err)
		default:
			out[i] = int(n)
		}
	}
	return out, nil
}
