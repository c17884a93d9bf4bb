package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// addEntryScript appends a grant or web entry, once per reference, never
// taking the balance below zero.
//
//	KEYS[1] balance  KEYS[2] ledger  KEYS[3] refs
//	ARGV[1] now  ARGV[2] kind  ARGV[3] amount  ARGV[4] ref  ARGV[5] the call's token (random)
//
// The entry keeps the call's token (op): a run sent again after its
// reply was lost (go-redis sends a command again when its connection
// breaks) finds the reference used by its own entry among the owner's
// last 1024 entries (others written in between are its charges and
// refunds, a few a second), and answers applied, not -1. The check is
// made only when the reference was used.
//
// Returns {1, balance} when applied, {0, balance} when the balance is
// short, {-1, balance} when the reference was used, {-2, balance} when
// the balance would pass the largest integer (INCRBY's overflow).
var addEntryScript = newScript(`
local now = now_ms()
local held = redis.call('GET', KEYS[1]) or '0'
local balance = tonumber(held)
if redis.call('SISMEMBER', KEYS[3], ARGV[4]) == 1 then
  local op = '"' .. ARGV[5] .. '"'
  for from = -64, -1024, -64 do
    local entries = redis.call('LRANGE', KEYS[2], from, from + 63)
    for i = #entries, 1, -1 do
      if string.find(entries[i], op, 1, true) then
        local e = cjson.decode(entries[i])
        if e.op == ARGV[5] and e.ref == ARGV[4] then return {1, held} end -- this very entry, sent again
      end
    end
    if #entries < 64 then break end
  end
  return {-1, held}
end
local amount = tonumber(ARGV[3])
if balance + amount < 0 then return {0, held} end
if not takes_list(KEYS[2]) then -- the RPUSH below would fail after the credit and the reference
  return redis.error_reply("the owner's ledger holds a value of another kind; nothing changed")
end
local after = redis.pcall('INCRBY', KEYS[1], ARGV[3]) -- ARGV[3] as sent: exact, where amount is a double
if type(after) == 'table' then
  if string.find(after.err, 'overflow', 1, true) then return {-2, held} end -- past the largest balance
  return after
end
if after < 0 then
  -- Short after all: above 2^53 the doubles compared above can miss a
  -- shortfall smaller than their spacing there. The sign of the exact
  -- result is exact; the debit is taken back, and nothing was written.
  redis.call('DECRBY', KEYS[1], ARGV[3])
  return {0, held}
end
after = exact_balance(KEYS[1], after)
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('RPUSH', KEYS[2], ledger_entry(ARGV[2], ARGV[3], ARGV[4], now, after, ARGV[5]))
return {1, after}
`)

// AddEntry appends e to the owner's ledger. References "task:…" and
// "refund:…" belong to the store's own charges and refunds. An entry
// whose reply was lost and that go-redis sent again is answered as
// applied, not as ErrDuplicateEntry: the run sent again finds its own
// entry (each keeps the call's token) among the owner's last entries.
func (s *Store) AddEntry(ctx context.Context, e imagegen.LedgerEntry) (int64, error) {
	if err := storekit.CheckLedgerEntry(e); err != nil {
		return 0, err
	}
	k := s.byOwner(e.Owner)
	res, err := s.ackedScript(ctx, addEntryScript,
		[]string{k.balance(e.Owner), k.ledger(e.Owner), k.refs(e.Owner)},
		s.nowArg(), string(e.Kind), e.Amount, e.Ref, callToken(),
	).Int64Slice()
	if err != nil {
		return 0, wrapErr("add ledger entry", err)
	}
	switch res[0] {
	case 0:
		return res[1], imagegen.ErrInsufficientCredits
	case -1:
		return res[1], fmt.Errorf("redis store: ref %q: %w", e.Ref, imagegen.ErrDuplicateEntry)
	case -2:
		return res[1], fmt.Errorf("redis store: %s's balance would pass %d with %d more: %w", e.Owner, int64(math.MaxInt64), e.Amount, imagegen.ErrInvalidParams)
	}
	return res[1], nil
}

// Balance returns the owner's balance.
func (s *Store) Balance(ctx context.Context, owner string) (int64, error) {
	b, err := s.rdb.Get(ctx, s.byOwner(owner).balance(owner)).Int64()
	if isNil(err) {
		return 0, nil
	}
	return b, wrapErr("balance", err)
}

// Ledger returns the owner's entries, oldest first.
func (s *Store) Ledger(ctx context.Context, owner string) ([]imagegen.LedgerEntry, error) {
	raw, err := s.rdb.LRange(ctx, s.byOwner(owner).ledger(owner), 0, -1).Result()
	if err != nil {
		return nil, wrapErr("ledger", err)
	}
	return decodeLedger(owner, raw, 0, 0)
}

// ListLedger returns a page of the owner's entries, newest first. An
// entry's ID is its position in the ledger list (from 1); the list only
// grows, so positions never move, and the cursor is the ID of the last
// entry of the previous page.
func (s *Store) ListLedger(ctx context.Context, owner string, limit int, cursor string) (imagegen.LedgerPage, error) {
	key := s.byOwner(owner).ledger(owner)
	n, err := s.rdb.LLen(ctx, key).Result()
	if err != nil {
		return imagegen.LedgerPage{}, wrapErr("ledger", err)
	}
	end := n // entries [0, end) are still to be listed
	if cursor != "" {
		c, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || c < 1 || c > n || strconv.FormatInt(c, 10) != cursor {
			return imagegen.LedgerPage{}, fmt.Errorf("redis store: bad ledger cursor: %w", imagegen.ErrInvalidParams)
		}
		end = c - 1
	}
	start := max(0, end-int64(limit))
	var page imagegen.LedgerPage
	if end == 0 {
		return page, nil
	}
	raw, err := s.rdb.LRange(ctx, key, start, end-1).Result()
	if err != nil {
		return imagegen.LedgerPage{}, wrapErr("ledger", err)
	}
	var before int64 // the balance before entry start, needed only for old entries without one
	for _, r := range raw {
		if !strings.Contains(r, `"bal":`) {
			if before, err = s.ledgerSum(ctx, key, start); err != nil {
				return imagegen.LedgerPage{}, err
			}
			break
		}
	}
	entries, err := decodeLedger(owner, raw, start, before)
	if err != nil {
		return imagegen.LedgerPage{}, err
	}
	slices.Reverse(entries)
	page.Entries = entries
	if start > 0 {
		page.Next = strconv.FormatInt(start+1, 10)
	}
	return page, nil
}

// ledgerSum adds up the amounts of the first n entries of a ledger.
func (s *Store) ledgerSum(ctx context.Context, key string, n int64) (int64, error) {
	if n == 0 {
		return 0, nil
	}
	raw, err := s.rdb.LRange(ctx, key, 0, n-1).Result()
	if err != nil {
		return 0, wrapErr("ledger", err)
	}
	entries, err := decodeLedger("", raw, 0, 0)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	return entries[len(entries)-1].BalanceAfter, nil
}

// decodeLedger reads stored entries that start at position first (from
// 0) of the ledger, whose balance before them was before. An entry
// without a recorded balance gets the running sum.
func decodeLedger(owner string, raw []string, first, before int64) ([]imagegen.LedgerEntry, error) {
	out := make([]imagegen.LedgerEntry, 0, len(raw))
	balance := before
	for i, r := range raw {
		var e ledgerEntry
		if err := json.Unmarshal([]byte(r), &e); err != nil {
			return nil, fmt.Errorf("redis store: ledger entry: %w", err)
		}
		balance += e.Amount
		if e.Bal != nil {
			balance = *e.Bal
		}
		out = append(out, imagegen.LedgerEntry{
			ID: strconv.FormatInt(first+int64(i)+1, 10), Owner: owner, Kind: e.Kind, Amount: e.Amount,
			Ref: e.Ref, At: fromMS(e.At), BalanceAfter: balance,
		})
	}
	return out, nil
}
