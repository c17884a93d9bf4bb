package memory

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

type account struct {
	owner   string
	balance int64
	// entries are the ledger in chunks of entryChunk: appending never
	// copies the chunks before (one slice grown by append would copy the
	// whole ledger at each growth, about four times an entry's size of
	// garbage an append once it is long). n counts them.
	entries [][]entry
	n       int
	refs    refSet
	// texts are the strings entries keep by number: the kinds (few),
	// then the references that are not a taskRef, as they come.
	texts []string
	kinds []uint32 // the kinds' places in texts
}

// entryChunk is how many ledger entries an account keeps in one slice.
const entryChunk = 1024

// entry is a ledger entry as its account keeps it: the owner is the
// account's and the ID the entry's position (from 1), both filled in
// when it is read (account.entry), so that an entry costs no
// allocation of its own (a submit appends one). It has no pointers
// (ledgerrefs.go): its kind and, unless it is a taskRef, its reference
// are strings of account.texts, by number.
type entry struct {
	amount, balanceAfter int64
	at                   stamp // no location
	task                 taskRef
	kind, text           uint32 // in account.texts; text when task.form is refText
}

// entry returns the ledger entry at index i, as the store's callers see
// it, with its time in loc.
func (a *account) entry(i int, loc *time.Location) imagegen.LedgerEntry {
	e := a.entries[i/entryChunk][i%entryChunk]
	ref := a.texts[e.text]
	if e.task.form != refText {
		ref = e.task.String()
	}
	return imagegen.LedgerEntry{ID: strconv.Itoa(i + 1), Owner: a.owner, Kind: imagegen.LedgerKind(a.texts[e.kind]), Amount: e.amount, Ref: ref, At: e.at.in(loc), BalanceAfter: e.balanceAfter}
}

// newEntry returns e as a's ledger keeps it (after its balance changed),
// and t its reference as taskRefOf returns it.
func (a *account) newEntry(e imagegen.LedgerEntry, t taskRef, at stamp) entry {
	kept := entry{amount: e.Amount, balanceAfter: a.balance, at: at, task: t, kind: a.kind(e.Kind)}
	if t.form == refText {
		kept.text = uint32(len(a.texts))
		a.texts = append(a.texts, e.Ref)
	}
	return kept
}

// kind returns k's place in a.texts, added if a has no entry of kind k
// yet (a ledger has few kinds: they are looked for one by one).
func (a *account) kind(k imagegen.LedgerKind) uint32 {
	for _, i := range a.kinds {
		if a.texts[i] == string(k) {
			return i
		}
	}
	i := uint32(len(a.texts))
	a.texts = append(a.texts, string(k))
	a.kinds = append(a.kinds, i)
	return i
}

// AddEntry appends e to the owner's ledger.
func (s *Store) AddEntry(_ context.Context, e imagegen.LedgerEntry) (int64, error) {
	if err := storekit.CheckLedgerEntry(e); err != nil {
		return 0, err
	}
	now := s.lock()
	defer s.mu.Unlock()
	return s.appendEntry(e, now)
}

// appendEntry applies the ledger rules; s.mu is held. An entry that
// would take the balance past math.MaxInt64 is refused
// (ErrInvalidParams), as the other stores refuse it.
func (s *Store) appendEntry(e imagegen.LedgerEntry, now time.Time) (int64, error) {
	return s.appendEntryRef(e, taskRefOf(e.Ref), now)
}

// appendEntryRef is appendEntry with e.Ref as taskRefOf returns it;
// when that is a taskRef, e.Ref need not be set.
func (s *Store) appendEntryRef(e imagegen.LedgerEntry, ref taskRef, now time.Time) (int64, error) {
	a := s.accounts[e.Owner]
	if a == nil {
		a = &account{owner: e.Owner}
		s.accounts[e.Owner] = a
	}
	if a.refs.has(e.Ref, ref) {
		return a.balance, fmt.Errorf("memory: ref %q: %w", refString(e.Ref, ref), imagegen.ErrDuplicateEntry)
	}
	if e.Amount > 0 && a.balance > math.MaxInt64-e.Amount {
		return a.balance, fmt.Errorf("memory: %s's balance would pass %d with %d more: %w", e.Owner, int64(math.MaxInt64), e.Amount, imagegen.ErrInvalidParams)
	}
	if a.balance+e.Amount < 0 {
		return a.balance, imagegen.ErrInsufficientCredits
	}
	a.balance += e.Amount
	if a.n%entryChunk == 0 {
		var chunk []entry // the first grows as appended to: most ledgers are short
		if a.n > 0 {
			chunk = make([]entry, 0, entryChunk)
		}
		a.entries = append(a.entries, chunk)
	}
	last := &a.entries[len(a.entries)-1]
	*last = append(*last, a.newEntry(e, ref, stampOf(now)))
	a.n++
	a.refs.add(e.Ref, ref)
	return a.balance, nil
}

// Balance returns the owner's balance.
func (s *Store) Balance(_ context.Context, owner string) (int64, error) {
	s.lock()
	defer s.mu.Unlock()
	if a := s.accounts[owner]; a != nil {
		return a.balance, nil
	}
	return 0, nil
}

// Ledger returns a copy of the owner's entries, oldest first.
func (s *Store) Ledger(_ context.Context, owner string) ([]imagegen.LedgerEntry, error) {
	s.lock()
	defer s.mu.Unlock()
	a := s.accounts[owner]
	if a == nil {
		return nil, nil
	}
	out := make([]imagegen.LedgerEntry, a.n)
	for i := range a.n {
		out[i] = a.entry(i, s.loc)
	}
	return out, nil
}

// ListLedger returns a page of the owner's entries, newest first. An
// entry's ID is its position in the ledger (from 1), and the cursor is
// the ID of the last entry of the previous page.
func (s *Store) ListLedger(_ context.Context, owner string, limit int, cursor string) (imagegen.LedgerPage, error) {
	s.lock()
	defer s.mu.Unlock()
	a := s.accounts[owner]
	if a == nil {
		a = &account{}
	}
	end := a.n // entries 0 to end-1 are still to be listed
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 1 || n > a.n || strconv.Itoa(n) != cursor {
			return imagegen.LedgerPage{}, fmt.Errorf("memory: bad ledger cursor: %w", imagegen.ErrInvalidParams)
		}
		end = n - 1
	}
	start := max(0, end-limit)
	page := imagegen.LedgerPage{Entries: make([]imagegen.LedgerEntry, 0, end-start)}
	for i := end - 1; i >= start; i-- {
		page.Entries = append(page.Entries, a.entry(i, s.loc))
	}
	if start > 0 {
		page.Next = strconv.Itoa(start + 1) // the ID of entry start
	}
	return page, nil
}
