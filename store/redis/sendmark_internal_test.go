package redis

import (
	"context"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// TestClaimTokenMarksWritesAfterTheFirst: the claim's token is written
// as "f…" once and as "a…" (sent again) every time after.
func TestClaimTokenMarksWritesAfterTheFirst(t *testing.T) {
	tok := newSendMark()
	for i, want := range []string{"f", "a", "a"} {
		b, err := tok.MarshalBinary()
		if err != nil || string(b) != want+tok.token {
			t.Fatalf("write %d: %q, %v; want %q", i, b, err, want+tok.token)
		}
	}
	if newSendMark().token == tok.token {
		t.Fatal("two calls, one token")
	}
}

// TestClaimSentAgainWhoseFirstRunNeverRan: a claim marked as sent again
// whose first run never ran (a MOVED, a connection broken before Redis
// read it), or claimed nothing, finds no task of its token and claims
// as any other; the tasks of other claims, of other tokens, are not
// taken for its own.
func TestClaimSentAgainWhoseFirstRunNeverRan(t *testing.T) {
	fundedStores(t, 10, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for _, id := range []string{"t1", "t2"} {
			if _, err := s.CreateTask(ctx, schedTask(id, "a"), imagegen.CreateParams{}); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 1}); err != nil || len(got) != 1 || got[0].ID != "t1" {
			t.Fatalf("claimed %v, %v; want t1", got, err)
		}
		tok := newSendMark()
		_, _ = tok.MarshalBinary() // its first write, which never ran
		sh := s.shards[0]
		reply, err := claimScript.Run(ctx, s.rdb, []string{sh.fair(), sh.leases(), sh.webhooks(), sh.vtag(), sh.capped(), sh.vtime()},
			s.nowArg(), ms(time.Minute), 1, 0, imagegen.ClaimScan, tok).Slice()
		if err != nil || len(reply) != 1 {
			t.Fatalf("reply %v, %v; want one task", reply, err)
		}
		f, err := claimedHash(reply[0])
		if err != nil || f["id"] != "t2" {
			t.Fatalf("claimed %v, %v; want t2", f, err)
		}
	})
}

// TestClaimTokenAfterNoScript: after a NOSCRIPT, the EVAL is written as
// a first send only when the EVALSHA was written once (nothing ran);
// after an EVALSHA written twice (the first may have run), as sent again.
func TestClaimTokenAfterNoScript(t *testing.T) {
	for writes, want := range map[int]string{1: "f", 2: "a", 3: "a"} {
		tok := newSendMark()
		for range writes {
			_, _ = tok.MarshalBinary()
		}
		tok.noScript()
		if b, _ := tok.MarshalBinary(); string(b) != want+tok.token {
			t.Fatalf("after %d writes and NOSCRIPT: %q; want %q", writes, b, want+tok.token)
		}
	}
}
