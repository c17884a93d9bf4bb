package redis

import (
	"context"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// TestGrantOntoALedgerOfAnotherKindWritesNothing: a grant whose owner's
// ledger holds a value of another kind used to keep the credit and the
// reference (which refuses the grant's retries) with no ledger entry.
func TestGrantOntoALedgerOfAnotherKindWritesNothing(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		spoil(t, s, s.k.ledger("b"))
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "b", Kind: imagegen.LedgerGrant, Amount: 5, Ref: "grant:b1"}); err == nil {
			t.Fatal("grant onto a ledger of another kind: no error")
		}
		if n, _ := s.rdb.Exists(ctx, s.k.balance("b"), s.k.refs("b")).Result(); n != 0 {
			t.Fatalf("%d of b's balance and references kept; want none", n)
		}
		if err := s.rdb.Del(ctx, s.k.ledger("b")).Err(); err != nil {
			t.Fatal(err)
		}
		if bal, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "b", Kind: imagegen.LedgerGrant, Amount: 5, Ref: "grant:b1"}); err != nil || bal != 5 {
			t.Fatalf("the grant again, once mended: %d, %v; want 5", bal, err)
		}
	})
}

// TestSessionNotLiveWhenItsIndexCannotTakeIt: a session whose owner's
// index holds a value of another kind used to be live but unindexed,
// out of the reach of EndSessions (sign-out everywhere); now it is not
// made.
func TestSessionNotLiveWhenItsIndexCannotTakeIt(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		spoil(t, s, s.k.ownerSessions("a"))
		if _, err := s.PutSession(ctx, imagegen.Session{ID: "s1", Owner: "a"}, time.Hour); err == nil {
			t.Fatal("PutSession: no error")
		}
		if got, err := s.Session(ctx, "s1"); err == nil {
			t.Fatalf("session %+v is live; want none", got)
		}
	})
}
