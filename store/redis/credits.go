package redis

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/imagegen/imagegen"
)

// addEntryScript appends a grant or web entry, once per reference, never
// taking the balance below zero.
//
//	KEYS[1] balance  KEYS[2] ledger  KEYS[3] refs
//	ARGV[1] now  ARGV[2] kind  ARGV[3] amount  ARGV[4] ref
//
// Returns {1, balance} when applied, {0, balance} when the balance is
// short, {-1, balance} when the reference was used.
var addEntryScript = newScript(`
local now = now_ms()
local balance = tonumber(redis.call('GET', KEYS[1]) or '0')
if redis.call('SISMEMBER', KEYS[3], ARGV[4]) == 1 then return {-1, balance} end
local amount = tonumber(ARGV[3])
if balance + amount < 0 then return {0, balance} end
balance = redis.call('INCRBY', KEYS[1], amount)
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('RPUSH', KEYS[2], cjson.encode({kind = ARGV[2], amount = amount, ref = ARGV[4], at = now}))
return {1, balance}
`)

// AddEntry appends e to the owner's ledger. References "task:…" and
// "refund:…" belong to the store's own charges and refunds.
func (s *Store) AddEntry(ctx context.Context, e imagegen.LedgerEntry) (int64, error) {
	if err := imagegen.CheckLedgerEntry(e); err != nil {
		return 0, err
	}
	k := s.k
	res, err := addEntryScript.Run(ctx, s.rdb,
		[]string{k.balance(e.Owner), k.ledger(e.Owner), k.refs(e.Owner)},
		s.nowArg(), string(e.Kind), e.Amount, e.Ref,
	).Int64Slice()
	if err != nil {
		return 0, wrapErr("add ledger entry", err)
	}
	switch res[0] {
	case 0:
		return res[1], imagegen.ErrInsufficientCredits
	case -1:
		return res[1], fmt.Errorf("redis store: ref %q: %w", e.Ref, imagegen.ErrDuplicateEntry)
	}
	return res[1], nil
}

// Balance returns the owner's balance.
func (s *Store) Balance(ctx context.Context, owner string) (int64, error) {
	b, err := s.rdb.Get(ctx, s.k.balance(owner)).Int64()
	if isNil(err) {
		return 0, nil
	}
	return b, wrapErr("balance", err)
}

// Ledger returns the owner's entries, oldest first.
func (s *Store) Ledger(ctx context.Context, owner string) ([]imagegen.LedgerEntry, error) {
	raw, err := s.rdb.LRange(ctx, s.k.ledger(owner), 0, -1).Result()
	if err != nil {
		return nil, wrapErr("ledger", err)
	}
	out := make([]imagegen.LedgerEntry, 0, len(raw))
	for _, r := range raw {
		var e ledgerEntry
		if err := json.Unmarshal([]byte(r), &e); err != nil {
			return nil, fmt.Errorf("redis store: ledger entry: %w", err)
		}
		out = append(out, imagegen.LedgerEntry{Owner: owner, Kind: e.Kind, Amount: e.Amount, Ref: e.Ref, At: fromMS(e.At)})
	}
	return out, nil
}
