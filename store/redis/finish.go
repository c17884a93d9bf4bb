package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	blobredis "github.com/imagegen/imagegen/blob/redis"
	"github.com/imagegen/imagegen/internal/groupcommit"
	"github.com/imagegen/imagegen/store/internal/leases"
	"github.com/imagegen/imagegen/store/storekit"
)

// completeScript records the images of a batch of successes and moves
// each task to success: one script run for the successes that arrive
// together (group commit), each task still checked against its own
// fencing token, so a batch is exactly its tasks completed one after
// another. It reads the clock once and sets up once for the batch,
// which a pipeline of one run a task did for each.
//
// A success sent with its images' bytes (CompleteTaskWithBytes) names
// the keys that the same round trip wrote them to: it is recorded only
// when they all exist, and when it is not recorded they are deleted.
// The bytes' keys of the whole run come last, so that one EXISTS asks
// for all of them: when every one exists (the usual case) no success
// asks again; otherwise, or once the run has deleted bytes, each
// success checks its own keys.
//
//	KEYS[1] leases  KEYS[2] webhooks
//	then per task: its task key, its image records' keys
//	then the bytes' keys of the tasks that bring them, in task order
//	ARGV[1] now  ARGV[2] retention (ms)  ARGV[3] the index in KEYS of
//	the first bytes' key (#KEYS + 1 when none)
//	then per task: attempt, id, image ids (JSON), the seed the model
//	used ("" keeps the task's: decodeTask reads the field seed over the
//	request's), how many images (negative when their bytes' keys are
//	among the bytes' keys: one argument where a flag of its own was
//	another, at about 1,300 server instructions each), and per image
//	its record up to its times (see imageRecord)
//
// Returns, per task, 1; 2 when the task is a success of this attempt
// with these images already (the same run sent again after a broken
// connection, which go-redis does: the success was recorded, and is
// answered so); 0 when its attempt does not hold the lease; or -1 when
// some of its bytes are missing (nothing recorded, the others deleted).
// The bytes of a success not recorded are deleted, but for a success
// recorded already with these images: they are its record's.
var completeScript = newScript(`
local now = now_ms()
local retention = tonumber(ARGV[2])
local times = int(now) .. ',"expires":' .. int(now + retention) .. '}' -- how every image record ends
local first_bytes = tonumber(ARGV[3])
local bk = first_bytes -- the next task's first bytes' key
-- EXISTS counts each key it is given: all exist when it counts them all.
local all_there = first_bytes > #KEYS or redis.call('EXISTS', unpack(KEYS, first_bytes)) == #KEYS - first_bytes + 1
local out, done, k, a = {}, {}, 3, 4
while k < first_bytes do
  local task, attempt, id, ids, seed, n = KEYS[k], ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], tonumber(ARGV[a + 4])
  local blobs = n < 0
  if blobs then n = -n end
  a = a + 5
  local h = holds(task, attempt, 'created')
  local result, keep = 0, false
  if h then
    result = 1
    if blobs and not all_there then
      for j = bk, bk + n - 1 do
        if redis.call('EXISTS', KEYS[j]) == 0 then
          result = -1
          break
        end
      end
    end
  elseif n > 0 then
    -- This very success, recorded already (a run sent again after a
    -- broken connection: go-redis does): answered as recorded (2), and
    -- its bytes are the record's, kept. Its image ids, random and new
    -- to the success, make that a proof.
    local f = redis.call('HMGET', task, 'status', 'attempt', 'images')
    keep = f[1] == 'success' and f[2] == attempt and f[3] == ids
    if keep then result = 2 end
  end
  if result == 1 then
    for j = 1, n do
      -- One string with its TTL: one call, where a hash took two.
      redis.call('SET', KEYS[k + j], ARGV[a + j - 1] .. times, 'PX', ARGV[2])
    end
    if seed == '' then
      finish(task, false, id, 'success', now, retention, KEYS[2], h, 'images', ids)
    else
      finish(task, false, id, 'success', now, retention, KEYS[2], h, 'images', ids, 'seed', seed)
    end
    done[#done + 1] = id
  elseif blobs and n > 0 and not keep then -- not recorded: its bytes go too
    redis.call('DEL', unpack(KEYS, bk, bk + n - 1))
    all_there = false -- they may be a later success's too: each checks its own from here
  end
  out[#out + 1] = result
  a = a + n
  k = k + 1 + n
  if blobs then bk = bk + n end
end
if #done > 0 then redis.call('ZREM', KEYS[1], unpack(done)) end -- their leases
return out
`)

// CompleteTask stores the images' records and moves the task to success,
// with seed (when not nil) as its seed, atomically. The bytes are
// already in the BlobStore. Concurrent calls share a script run (group
// commit, as CreateTask's do).
func (s *Store) CompleteTask(ctx context.Context, id string, attempt int, images []imagegen.Image, seed *int64) error {
	c, err := s.completeArgs(id, attempt, images, nil, seed)
	if err != nil {
		return err
	}
	_, err = s.completes.Do(ctx, c)
	return err
}

// CompleteTaskWithBytes is CompleteTask that also stores data[i] as the
// bytes of images[i], in the same round trip as the records: the SETs
// of the bytes, then the script, which records the success only when
// the bytes are all there. When the task is not recorded (a lost
// lease, missing bytes), the script deletes the bytes. It does this with the
// store's own BlobStore (blob/redis, the default) and when it waits for
// no replicas; otherwise it reports done false and does nothing.
func (s *Store) CompleteTaskWithBytes(ctx context.Context, id string, attempt int, images []imagegen.Image, data [][]byte, seed *int64) (bool, error) {
	if s.ownBlobs == nil || s.waitReplicas > 0 {
		return false, nil
	}
	if len(data) != len(images) {
		return true, fmt.Errorf("redis store: %w: %d images with %d byte slices", storekit.ErrInvalidStoreInput, len(images), len(data))
	}
	writes := make([]blobredis.Write, len(images))
	for i, img := range images {
		w, err := s.ownBlobs.PreparePut(img.ID, data[i])
		if err != nil {
			return true, fmt.Errorf("redis store: complete task %s: %w", id, err)
		}
		writes[i] = w
	}
	c, err := s.completeArgs(id, attempt, images, writes, seed)
	if err != nil {
		return true, err
	}
	_, err = s.completes.Do(ctx, c)
	return true, err
}

// completeArgs checks a success's images and makes its keys and
// arguments of completeScript; writes, when not nil, are its images'
// bytes (whose keys completeRun puts after every task's keys).
func (s *Store) completeArgs(id string, attempt int, images []imagegen.Image, writes []blobredis.Write, seed *int64) (completeArgs, error) {
	sh := s.byID(id)
	keys := make([]string, 0, 1+len(images))
	keys = append(keys, sh.task(id))
	ids := make([]string, len(images))
	for i, img := range images {
		if img.ID == "" {
			return completeArgs{}, errors.New("redis store: image needs an ID")
		}
		ids[i] = img.ID
		if s.byID(img.ID).tag != sh.tag {
			return completeArgs{}, fmt.Errorf("redis store: %w: image id %q is not of its task's shard (make it with imagegen.NewOwnedID of the task's owner)", storekit.ErrInvalidStoreInput, img.ID)
		}
		keys = append(keys, sh.image(img.ID))
	}
	idsJSON, err := stringsJSON(ids)
	if err != nil {
		return completeArgs{}, fmt.Errorf("redis store: encode image ids: %w", err)
	}
	used, n := "", len(images)
	if seed != nil {
		used = strconv.FormatInt(*seed, 10)
	}
	if writes != nil {
		n = -n // its bytes' keys are in the run's
	}
	args := make([]any, 0, 5+len(images))
	args = append(args, strconv.Itoa(attempt), id, idsJSON, used, n)
	for _, img := range images {
		args = append(args, imageRecordHead(id, img))
	}
	return completeArgs{shard: sh, id: id, attempt: attempt, keys: keys, args: args, writes: writes}, nil
}

// stringsJSON is json.Marshal(list), written by hand when no string
// needs escaping (image ids never do): the encoder's reflection grew the
// stack of each worker goroutine that completed a task.
func stringsJSON(list []string) ([]byte, error) {
	if list == nil {
		return json.Marshal(list)
	}
	n := 2
	for _, s := range list {
		n += len(s) + 3
	}
	b := append(make([]byte, 0, n), '[')
	for i, s := range list {
		if !plainJSON(s) {
			return json.Marshal(list)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
	}
	return append(b, ']'), nil
}

// completeArgs are one success's keys and arguments of completeScript,
// and its images' bytes when it brings them.
type completeArgs struct {
	shard   keys // of the task
	id      string
	attempt int
	keys    []string
	args    []any
	writes  []blobredis.Write
}

// size is how many bytes of images c sends, for the batcher's MaxSize.
func (c completeArgs) size() int {
	n := 0
	for _, w := range c.writes {
		n += w.Size()
	}
	return n
}

type completeCall = groupcommit.Call[completeArgs, struct{}]

// runCompletes runs completeScript for a batch of successes: one run per
// shard the batch's tasks live in, the shards at once.
func (s *Store) runCompletes(ctx context.Context, batch []*completeCall) {
	if !s.sharded {
		s.runShardCompletes(ctx, s.shards[0], batch)
		return
	}
	byShard := map[string][]*completeCall{}
	for _, c := range batch {
		byShard[c.Req.shard.tag] = append(byShard[c.Req.shard.tag], c)
	}
	var wg sync.WaitGroup
	for _, calls := range byShard {
		wg.Go(func() { s.runShardCompletes(ctx, calls[0].Req.shard, calls) })
	}
	wg.Wait()
}

// completeRun makes completeScript's keys and arguments for successes
// of one shard: its keys, every task's keys, then the bytes' keys of the
// tasks that bring them.
func (s *Store) completeRun(sh keys, batch []completeArgs) (keys []string, args []any, writes int) {
	nk, na := 2, 3
	for _, c := range batch {
		nk, na, writes = nk+len(c.keys)+len(c.writes), na+len(c.args), writes+len(c.writes)
	}
	keys = append(make([]string, 0, nk), sh.leases(), sh.webhooks())
	args = append(make([]any, 0, na), s.nowArg(), ms(s.retention), nk-writes+1)
	for _, c := range batch {
		keys = append(keys, c.keys...)
		args = append(args, c.args...)
	}
	for _, c := range batch {
		for _, w := range c.writes {
			keys = append(keys, w.Key)
		}
	}
	return keys, args, writes
}

// runShardCompletes runs completeScript for successes of one shard,
// after the SETs of the bytes they bring, in one round trip.
func (s *Store) runShardCompletes(ctx context.Context, sh keys, batch []*completeCall) {
	reqs := make([]completeArgs, len(batch))
	for i, c := range batch {
		reqs[i] = c.Req
	}
	keys, args, writes := s.completeRun(sh, reqs)
	var cmd *goredis.Cmd
	if writes == 0 {
		cmd = s.ackedScript(ctx, completeScript, keys, args...)
	} else {
		// The SETs' own results need no reading: the script checks that
		// their keys exist.
		_, _ = s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, c := range batch {
				for _, w := range c.Req.writes {
					w.Queue(ctx, p)
				}
			}
			cmd = completeScript.EvalSha(ctx, p, keys, args...)
			return nil
		})
		if goredis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			cmd = s.ackedScript(ctx, completeScript, keys, args...) // loads it (no replicas waited for with bytes)
		}
	}
	res, err := cmd.Int64Slice()
	if err == nil && len(res) != len(batch) {
		err = fmt.Errorf("unexpected reply of %d values for %d tasks", len(res), len(batch))
	}
	for i, c := range batch {
		switch {
		case err != nil:
			c.Err = leases.Result(storeName, c.Req.id, c.Req.attempt, false, err)
		case res[i] < 0:
			c.Err = fmt.Errorf("redis store: complete task %s: the bytes of its images were not stored", c.Req.id)
		default:
			c.Err = leases.Result(storeName, c.Req.id, c.Req.attempt, res[i] != 0, nil)
		}
	}
}

// failScript moves the task to failed and refunds it once.
//
//	KEYS[1] task  KEYS[2] leases  KEYS[3] balance  KEYS[4] ledger  KEYS[5] webhooks
//	ARGV[1] now   ARGV[2] attempt  ARGV[3] retention (ms)  ARGV[4] reason  ARGV[5] id
//	ARGV[6] error code  ARGV[7] the call's token (random)
//
// As a cancel does, the failure leaves its token and refund on the task
// (field cx): a run sent again after its reply was lost finds the task
// failed by its own call and answers as the first run did, not 0 (lease
// lost). The check is made only when attempt does not hold the lease.
//
// Returns 1 + the credits refunded (0 when the task had been refunded
// before), or 0 when attempt does not hold the lease.
var failScript = newScript(`
local now = now_ms()
local h = holds(KEYS[1], ARGV[2], 'created')
if not h then
  return resent_finish(redis.call('HGET', KEYS[1], 'cx'), ARGV[7]) or 0 -- this very failure, sent again, or lease lost
end
local refunded = refund(KEYS[1], KEYS[3], KEYS[4], ARGV[5], now)
if not refunded then return redis.error_reply("the owner's balance or ledger cannot take the refund; nothing changed") end
finish(KEYS[1], KEYS[2], ARGV[5], 'failed', now, tonumber(ARGV[3]), KEYS[5], h, 'error', ARGV[4], 'error_code', ARGV[6],
  'cx', finish_mark(ARGV[7], refunded))
return 1 + refunded
`)

// FailTask moves the task to failed and refunds it once. It reads the
// task's owner first, to name the owner's credit keys in the script. A
// failure whose reply was lost and that go-redis sent again answers as
// done, with its refund, not ErrLeaseLost.
func (s *Store) FailTask(ctx context.Context, id string, attempt int, f imagegen.Failure) (int64, error) {
	sh := s.byID(id)
	owner, err := s.rdb.HGet(ctx, sh.task(id), "owner").Result()
	if err != nil {
		if isNil(err) {
			return 0, leases.Lost(storeName, id, attempt)
		}
		return 0, fmt.Errorf("redis store: fail task: %w", err)
	}
	n, err := s.ackedScript(ctx, failScript, // acknowledged: it refunds
		[]string{sh.task(id), sh.leases(), sh.balance(owner), sh.ledger(owner), sh.webhooks()},
		s.holderArgs(attempt, []any{ms(s.retention), f.Message, id, string(f.Code), callToken()})...).Int64()
	if err := leases.Result(storeName, id, attempt, n != 0, err); err != nil {
		return 0, err
	}
	return n - 1, nil
}

// cancelScript fails the owner's pending or processing task and refunds
// it, but for a processing one's when ARGV[8] is "1"
// (CancelParams.KeepStartedCharge): its charge is kept. The status it
// decides on is the one it reads, in the same run. A processing task's
// lease ends with it (finish takes it out of the leases), so its worker
// can change nothing more.
//
//	KEYS[1] task  KEYS[2] pending  KEYS[3] balance  KEYS[4] ledger  KEYS[5] leases  KEYS[6] webhooks
//	ARGV[1] now   ARGV[2] owner  ARGV[3] reason  ARGV[4] retention (ms)  ARGV[5] id
//	ARGV[6] error code  ARGV[7] the call's token (random)  ARGV[8] keep a started charge ("1" or "0")
//
// The cancel leaves on the task its token and what it refunded (field
// cx, "<token>:<refunded>", as a failure does): a run sent again after its reply was lost
// (go-redis sends a command again when its connection breaks) finds the
// task finished by itself, and answers as the first run did, not -1.
// The check is made only when the task has finished.
//
// Returns 1 + the credits refunded (0 when the task had been refunded
// before), 0 when there is no such task of the owner, or -1 when the
// task has finished.
var cancelScript = newScript(`
local now = now_ms()
local f = redis.call('HMGET', KEYS[1], 'owner', 'status', 'cx', 'model')
if f[1] ~= ARGV[2] then return 0 end
if f[2] ~= 'pending' and f[2] ~= 'processing' then
  return resent_finish(f[3], ARGV[7]) or -1 -- this very cancel, sent again, or finished before
end
local refunded = 0
if ARGV[8] ~= '1' or f[2] ~= 'processing' then
  refunded = refund(KEYS[1], KEYS[3], KEYS[4], ARGV[5], now) -- first: it may write nothing and stop
  if not refunded then return redis.error_reply("the owner's balance or ledger cannot take the refund; nothing changed") end
end
dequeue(KEYS[1], ARGV[5], f[1], f[4] or '')
finish(KEYS[1], KEYS[5], ARGV[5], 'failed', now, tonumber(ARGV[4]), KEYS[6], nil, 'error', ARGV[3], 'error_code', ARGV[6],
  'cx', finish_mark(ARGV[7], refunded))
return 1 + refunded
`)

// CancelTask fails owner's pending or processing task and refunds it,
// but for a processing one's when p.KeepStartedCharge. A cancel whose reply was lost and that go-redis sent again answers as
// done, with what it refunded, not as a task already finished.
func (s *Store) CancelTask(ctx context.Context, owner, id string, p imagegen.CancelParams) (int64, error) {
	k := s.byID(id)
	if k.tag != s.byOwner(owner).tag {
		return 0, imagegen.ErrTaskNotFound // not the owner's: its id says another shard
	}
	n, err := s.ackedScript(ctx, cancelScript,
		[]string{k.task(id), k.pending(), k.balance(owner), k.ledger(owner), k.leases(), k.webhooks()},
		s.nowArg(), owner, imagegen.CancelledMessage, ms(s.retention), id, string(imagegen.CodeCancelled), callToken(),
		luaFlag(p.KeepStartedCharge),
	).Int64()
	switch {
	case err != nil:
		return 0, fmt.Errorf("redis store: cancel: %w", err)
	case n == 0:
		return 0, imagegen.ErrTaskNotFound
	case n < 0:
		return 0, fmt.Errorf("redis store: cancel task %s: %w", id, imagegen.ErrInvalidTransition)
	}
	return n - 1, nil
}
