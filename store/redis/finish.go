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
	"github.com/imagegen/imagegen/internal/groupcommit"
	"github.com/imagegen/imagegen/store/internal/leases"
	"github.com/imagegen/imagegen/store/storekit"
)

// completeScript records the images and moves the task to success.
//
//	KEYS[1] task  KEYS[2] leases  KEYS[3] webhooks  KEYS[4..] image records
//	ARGV[1] now   ARGV[2] attempt  ARGV[3] retention (ms)  ARGV[4] id
//	ARGV[5] image ids (JSON)
//	ARGV[6] the seed the model used ("" keeps the task's): kept in the
//	        task's field seed, which decodeTask reads over the request's
//	ARGV[7..]  per image: owner, content type, size, checksum
//
// Returns 1, or 0 when attempt does not hold the lease.
var completeScript = newScript(`
local now = now_ms()
local h = holds(KEYS[1], ARGV[2])
if not h then return 0 end
local retention = tonumber(ARGV[3])
local snow, expires = int(now), int(now + retention)
for k = 4, #KEYS do
  local a = 7 + (k - 4) * 4
  redis.call('HSET', KEYS[k], 'task', ARGV[4], 'owner', ARGV[a], 'type', ARGV[a + 1],
    'size', ARGV[a + 2], 'sum', ARGV[a + 3], 'created', snow, 'expires', expires)
  redis.call('PEXPIRE', KEYS[k], ARGV[3])
end
if ARGV[6] == '' then
  finish(KEYS[1], KEYS[2], ARGV[4], 'success', now, retention, KEYS[3], h, 'images', ARGV[5])
else
  finish(KEYS[1], KEYS[2], ARGV[4], 'success', now, retention, KEYS[3], h, 'images', ARGV[5], 'seed', ARGV[6])
end
return 1
`)

// CompleteTask stores the images' records and moves the task to success,
// with seed (when not nil) as its seed, in one script. The bytes are
// already in the BlobStore.
func (s *Store) CompleteTask(ctx context.Context, id string, attempt int, images []imagegen.Image, seed *int64) error {
	ids := make([]string, len(images))
	sh := s.byID(id)
	keys := []string{sh.task(id), sh.leases(), sh.webhooks()}
	for i, img := range images {
		if img.ID == "" {
			return errors.New("redis store: image needs an ID")
		}
		ids[i] = img.ID
		if s.byID(img.ID).tag != sh.tag {
			return fmt.Errorf("redis store: %w: image id %q is not of its task's shard (make it with imagegen.NewOwnedID of the task's owner)", storekit.ErrInvalidStoreInput, img.ID)
		}
		keys = append(keys, sh.image(img.ID))
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("redis store: encode image ids: %w", err)
	}
	used := ""
	if seed != nil {
		used = strconv.FormatInt(*seed, 10)
	}
	args := []any{ms(s.retention), id, idsJSON, used}
	for _, img := range images {
		args = append(args, img.Owner, img.ContentType, img.Size, img.Checksum)
	}
	_, err = s.completes.Do(ctx, holderCall{id: id, attempt: attempt, keys: keys, args: args})
	return err
}

// holderCall is one run of a lease holder's script (completeScript).
type holderCall struct {
	id      string
	attempt int
	keys    []string
	args    []any
}

type completeCall = groupcommit.Call[holderCall, struct{}]

// runCompletes runs the successes that arrive together as one pipeline
// of completeScript runs: one round trip for the batch, each task still
// its own atomic script checked against its own fencing token. A run the
// server did not know the script for goes again on its own (which loads
// it).
func (s *Store) runCompletes(ctx context.Context, batch []*completeCall) {
	if s.waitReplicas == 0 || !s.sharded {
		s.runShardCompletes(ctx, batch)
		return
	}
	// WAIT counts one connection's writes, so each shard's successes go
	// down their own master's connection, the shards at once.
	byShard := map[string][]*completeCall{}
	for _, c := range batch {
		tag := s.byID(c.Req.id).tag
		byShard[tag] = append(byShard[tag], c)
	}
	var wg sync.WaitGroup
	for _, calls := range byShard {
		wg.Go(func() { s.runShardCompletes(ctx, calls) })
	}
	wg.Wait()
}

// runShardCompletes is runCompletes for successes of one shard (or of
// any shards, when nothing waits for replicas: the client routes each
// script).
func (s *Store) runShardCompletes(ctx context.Context, batch []*completeCall) {
	cmds := make([]*goredis.Cmd, len(batch))
	ackErr := s.acked(ctx, batch[0].Req.keys[0], func(p goredis.Pipeliner) {
		for i, c := range batch {
			cmds[i] = completeScript.EvalSha(ctx, p, c.Req.keys, s.holderArgs(c.Req.attempt, c.Req.args)...)
		}
	})
	for i, c := range batch {
		n, err := cmds[i].Int64()
		if goredis.HasErrorPrefix(err, "NOSCRIPT") {
			c.Err = s.runHolder(ctx, completeScript, c.Req.id, c.Req.attempt, c.Req.keys, c.Req.args...)
			continue
		}
		if err == nil && errors.Is(ackErr, ErrNotReplicated) {
			err = ackErr
		}
		c.Err = leases.Result(storeName, c.Req.id, c.Req.attempt, n != 0, err)
	}
}

// failScript moves the task to failed and refunds it once.
//
//	KEYS[1] task  KEYS[2] leases  KEYS[3] balance  KEYS[4] ledger  KEYS[5] webhooks
//	ARGV[1] now   ARGV[2] attempt  ARGV[3] retention (ms)  ARGV[4] reason  ARGV[5] id
//	ARGV[6] error code
//
// Returns 1 + the credits refunded (0 when the task had been refunded
// before), or 0 when attempt does not hold the lease.
var failScript = newScript(`
local now = now_ms()
local h = holds(KEYS[1], ARGV[2])
if not h then return 0 end
local refunded = refund(KEYS[1], KEYS[3], KEYS[4], ARGV[5], now)
finish(KEYS[1], KEYS[2], ARGV[5], 'failed', now, tonumber(ARGV[3]), KEYS[5], h, 'error', ARGV[4], 'error_code', ARGV[6])
return 1 + refunded
`)

// FailTask moves the task to failed and refunds it once. It reads the
// task's owner first, to name the owner's credit keys in the script.
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
		s.holderArgs(attempt, []any{ms(s.retention), f.Message, id, string(f.Code)})...).Int64()
	if err := leases.Result(storeName, id, attempt, n != 0, err); err != nil {
		return 0, err
	}
	return n - 1, nil
}

// cancelScript fails the owner's pending or processing task and refunds
// it. A processing task's lease ends with it (finish takes it out of the
// leases), so its worker can change nothing more.
//
//	KEYS[1] task  KEYS[2] pending  KEYS[3] balance  KEYS[4] ledger  KEYS[5] leases  KEYS[6] webhooks
//	ARGV[1] now   ARGV[2] owner  ARGV[3] reason  ARGV[4] retention (ms)  ARGV[5] id
//	ARGV[6] error code
//
// Returns 1 + the credits refunded (0 when the task had been refunded
// before), 0 when there is no such task of the owner, or -1 when the
// task has finished.
var cancelScript = newScript(`
local now = now_ms()
local f = redis.call('HMGET', KEYS[1], 'owner', 'status')
if f[1] ~= ARGV[2] then return 0 end
if f[2] ~= 'pending' and f[2] ~= 'processing' then return -1 end
dequeue(KEYS[1], ARGV[5], f[1])
local refunded = refund(KEYS[1], KEYS[3], KEYS[4], ARGV[5], now)
finish(KEYS[1], KEYS[5], ARGV[5], 'failed', now, tonumber(ARGV[4]), KEYS[6], nil, 'error', ARGV[3], 'error_code', ARGV[6])
return 1 + refunded
`)

// CancelTask fails owner's pending or processing task and refunds it.
func (s *Store) CancelTask(ctx context.Context, owner, id string) (int64, error) {
	k := s.byID(id)
	if k.tag != s.byOwner(owner).tag {
		return 0, imagegen.ErrTaskNotFound // not the owner's: its id says another shard
	}
	n, err := s.ackedScript(ctx, cancelScript,
		[]string{k.task(id), k.pending(), k.balance(owner), k.ledger(owner), k.leases(), k.webhooks()},
		s.nowArg(), owner, imagegen.CancelledMessage, ms(s.retention), id, string(imagegen.CodeCancelled),
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
