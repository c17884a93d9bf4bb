package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/imagegen/imagegen"
)

// createScript debits the task's cost, appends the charge and stores the
// task as pending, or changes nothing when the balance is short.
//
//	KEYS[1] task  KEYS[2] balance  KEYS[3] ledger  KEYS[4] pending
//	ARGV[1] now   ARGV[2] id  ARGV[3] owner  ARGV[4] request JSON
//	ARGV[5] model ARGV[6] cost
//
// Returns {1, balance, now}, {0, balance, now} when short, or
// {-1, 0, now} when the id is taken.
var createScript = newScript(`
local now = now_ms()
if redis.call('EXISTS', KEYS[1]) == 1 then return {-1, 0, now} end
local cost = tonumber(ARGV[6])
local balance = tonumber(redis.call('GET', KEYS[2]) or '0')
if balance < cost then return {0, balance, now} end
balance = redis.call('DECRBY', KEYS[2], cost)
redis.call('RPUSH', KEYS[3], cjson.encode({kind = 'charge', amount = -cost, ref = 'task:' .. ARGV[2], at = now}))
redis.call('HSET', KEYS[1], 'id', ARGV[2], 'owner', ARGV[3], 'req', ARGV[4], 'model', ARGV[5],
  'cost', cost, 'status', 'pending', 'attempt', 0, 'run_after', now, 'created', now, 'updated', now)
redis.call('ZADD', KEYS[4], now, ARGV[2])
return {1, balance, now}
`)

// CreateTask debits t.Cost and stores t as pending in one round trip.
func (s *Store) CreateTask(ctx context.Context, t *imagegen.Task) (int64, error) {
	if t.ID == "" || t.Owner == "" {
		return 0, errors.New("redis store: task needs an ID and an Owner")
	}
	if t.Cost <= 0 {
		return 0, fmt.Errorf("redis store: task cost must be positive (got %d)", t.Cost)
	}
	req, err := json.Marshal(t.Request)
	if err != nil {
		return 0, fmt.Errorf("redis store: encode request: %w", err)
	}
	k := s.k
	res, err := createScript.Run(ctx, s.rdb,
		[]string{k.task(t.ID), k.balance(t.Owner), k.ledger(t.Owner), k.pending()},
		s.nowArg(), t.ID, t.Owner, req, t.Model, t.Cost,
	).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("redis store: create task: %w", err)
	}
	switch res[0] {
	case 0:
		return res[1], imagegen.ErrInsufficientCredits
	case -1:
		return 0, fmt.Errorf("redis store: task %q exists", t.ID)
	}
	now := fromMS(res[2])
	t.Status, t.Attempt = imagegen.StatusPending, 0
	t.CreatedAt, t.UpdatedAt, t.RunAfter = now, now, now
	return res[1], nil
}

// Task returns owner's task.
func (s *Store) Task(ctx context.Context, owner, id string) (*imagegen.Task, error) {
	f, err := s.rdb.HGetAll(ctx, s.k.task(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis store: task: %w", err)
	}
	if len(f) == 0 || f["owner"] != owner || s.expired(atoi(f["expires"])) {
		return nil, imagegen.ErrTaskNotFound
	}
	return decodeTask(f)
}
