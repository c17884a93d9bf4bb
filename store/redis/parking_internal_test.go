package redis

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// capOne is the owner cap of the parking tests' claims.
var capOne = imagegen.Limits{OwnerConcurrency: 1}

// parkingFixture is owner "a" with t-a0 running (at its cap of one) and
// t-a1..t-a5 pending, and owners "b", "c" and "d" with a task each
// (t-b, t-c, t-d) queued after them: claim order a1 b c d (one tag, a
// tie goes to the task queued first) a2 a3 a4 a5. The claim of t-b
// passes over t-a1. It returns a's running task.
func parkingFixture(t *testing.T, s *Store) *imagegen.Task {
	t.Helper()
	ctx := context.Background()
	s.clock = imagegentest.NewClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	submit(t, s, "a", "t-a0")
	if running := claimIDs(t, s, 1); !slices.Equal(running, []string{"t-a0"}) {
		t.Fatalf("claimed %v; want t-a0", running)
	}
	submit(t, s, "a", "t-a1", "t-a2", "t-a3", "t-a4", "t-a5")
	for _, owner := range []string{"b", "c", "d"} {
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 3, Ref: "grant:" + owner}); err != nil {
			t.Fatal(err)
		}
		submit(t, s, owner, "t-"+owner)
	}
	if got := claimIDs(t, s, 1); !slices.Equal(got, []string{"t-b"}) {
		t.Fatalf("claimed %v; want t-b (a is at its cap)", got)
	}
	return &imagegen.Task{ID: "t-a0", Attempt: 1}
}

// submit queues tasks of owner with the given ids (model "m", cost 3).
func submit(t *testing.T, s *Store, owner string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := s.CreateTask(context.Background(), schedTask(id, owner), imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
	}
}

// claimIDs claims up to n tasks under an owner cap of one and returns
// their ids (none when the claim finds none).
func claimIDs(t *testing.T, s *Store, n int) []string {
	t.Helper()
	c, err := s.ClaimTasks(context.Background(), imagegen.ClaimParams{Lease: time.Hour, N: n, Limits: capOne})
	if err != nil && err != imagegen.ErrNoTask {
		t.Fatal(err)
	}
	ids := make([]string, len(c))
	for i, task := range c {
		ids[i] = task.ID
	}
	return ids
}

// zmembers is the sorted set at key, lowest score first.
func zmembers(t *testing.T, s *Store, key string) []string {
	t.Helper()
	m, err := s.rdb.ZRange(context.Background(), key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOwnerAtCapHasItsTasksParked: a claim that finds an owner at its
// cap moves the tasks of it that it passes over out of the model's
// queue into the owner's parked queue, so that later claims do not read
// them while the owner stays at its cap (before, every claim read every
// such task: BenchmarkClaimAllOwnersAtCap). Their places in claim order
// and the scheduler's count of what the cap holds back are unchanged.
func TestOwnerAtCapHasItsTasksParked(t *testing.T) {
	fundedStores(t, 100, func(t *testing.T, s *Store) {
		ctx := context.Background()
		parkingFixture(t, s)
		if got, want := zmembers(t, s, s.k.parked("m", "a")), []string{"t-a1"}; !slices.Equal(got, want) {
			t.Fatalf("a's parked queue %v; want %v (the task the claim passed over to reach t-b1)", got, want)
		}
		if got := zmembers(t, s, s.k.parkedOwners("m")); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("parked owners of m %v; want [a]", got)
		}
		if got, err := s.rdb.SMembers(ctx, s.k.parkedModels()).Result(); err != nil || !slices.Equal(got, []string{"m"}) {
			t.Fatalf("models with parked owners %v, %v; want [m]", got, err)
		}
		// A claim that finds nothing to start parks the rest of a's tasks.
		if got := claimIDs(t, s, 3); !slices.Equal(got, []string{"t-c", "t-d"}) {
			t.Fatalf("claimed %v; want t-c t-d", got)
		}
		if got, want := zmembers(t, s, s.k.parked("m", "a")), []string{"t-a1", "t-a2", "t-a3", "t-a4", "t-a5"}; !slices.Equal(got, want) {
			t.Fatalf("a's parked queue %v; want %v", got, want)
		}
		if got := zmembers(t, s, s.k.fairModel("m")); len(got) != 0 {
			t.Fatalf("m's queue %v; want empty, every task of a parked", got)
		}
		pos, err := s.QueuePositions(ctx, []string{"t-a1", "t-a2", "t-a3", "t-a4", "t-a5"})
		if err != nil || !slices.Equal(pos, []int{0, 1, 2, 3, 4}) {
			t.Fatalf("positions %v, %v; want 0..4", pos, err)
		}
		st, err := s.SchedulerStats(ctx, capOne)
		if err != nil || st.Held[imagegen.HeldOwnerCap] != 5 {
			t.Fatalf("stats %+v, %v; want the 5 parked tasks held by the owner cap", st, err)
		}
	})
}

// TestParkedPositionsAreClaimOrder: positions count parked tasks among
// the others in claim order.
func TestParkedPositionsAreClaimOrder(t *testing.T) {
	fundedStores(t, 100, func(t *testing.T, s *Store) {
		parkingFixture(t, s)
		ids := []string{"t-a1", "t-c", "t-d", "t-a2", "t-a3", "t-a4", "t-a5"}
		pos, err := s.QueuePositions(context.Background(), ids)
		if err != nil || !slices.Equal(pos, []int{0, 1, 2, 3, 4, 5, 6}) {
			t.Fatalf("positions of %v: %v, %v; want 0..6", ids, pos, err)
		}
	})
}

// TestParkedOwnerGoesFirstWhenASlotFrees: once the parked owner's
// running task ends, its oldest parked task is the next claimed (its
// tag is the lowest), and its tasks keep their order; the owner stops
// being parked when its parked queue is empty.
func TestParkedOwnerGoesFirstWhenASlotFrees(t *testing.T) {
	fundedStores(t, 100, func(t *testing.T, s *Store) {
		ctx := context.Background()
		running := parkingFixture(t, s)
		var order []string
		for range 20 {
			got := claimIDs(t, s, 1)
			if len(got) == 0 { // a at its cap: end its running task
				if running == nil {
					break
				}
				if _, err := s.FailTask(ctx, running.ID, running.Attempt, imagegen.Failure{Code: imagegen.CodeProviderError, Message: "x"}); err != nil {
					t.Fatal(err)
				}
				running = nil
				continue
			}
			order = append(order, got[0])
			if got[0][2] == 'a' {
				running = &imagegen.Task{ID: got[0], Attempt: 1}
			}
			if len(order) == 1 { // a's slot frees before c and d are claimed
				if _, err := s.FailTask(ctx, "t-a0", 1, imagegen.Failure{Code: imagegen.CodeProviderError, Message: "x"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		want := []string{"t-c", "t-a1", "t-d", "t-a2", "t-a3", "t-a4", "t-a5"}
		if !slices.Equal(order, want) {
			t.Fatalf("claim order %v; want %v", order, want)
		}
		if n, err := s.rdb.Exists(ctx, s.k.parked("m", "a"), s.k.parkedOwners("m"), s.k.parkedModels()).Result(); err != nil || n != 0 {
			t.Fatalf("%d parking keys left (%v); want none once a's parked queue is empty", n, err)
		}
	})
}

// TestParkedTaskCancelled: a parked task is cancelled and refunded like
// any pending task, and leaves the parked queue.
func TestParkedTaskCancelled(t *testing.T) {
	fundedStores(t, 100, func(t *testing.T, s *Store) {
		ctx := context.Background()
		parkingFixture(t, s)
		for _, id := range []string{"t-a1"} {
			if refund, err := s.CancelTask(ctx, "a", id, imagegen.CancelParams{}); err != nil || refund != 3 {
				t.Fatalf("cancel %s: refund %d, %v; want 3", id, refund, err)
			}
		}
		if n, err := s.rdb.Exists(ctx, s.k.parked("m", "a"), s.k.parkedOwners("m"), s.k.parkedModels()).Result(); err != nil || n != 0 {
			t.Fatalf("%d parking keys left (%v); want none once a's parked tasks are cancelled", n, err)
		}
		if got := claimIDs(t, s, 3); !slices.Equal(got, []string{"t-c", "t-d"}) {
			t.Fatalf("claimed %v; want t-c t-d (a still at its cap)", got)
		}
	})
}

// TestParkedTasksClaimedWithoutACap: a claimer with no owner cap merges
// every parked queue it looks at.
func TestParkedTasksClaimedWithoutACap(t *testing.T) {
	fundedStores(t, 100, func(t *testing.T, s *Store) {
		parkingFixture(t, s)
		c, err := s.ClaimTasks(context.Background(), imagegen.ClaimParams{Lease: time.Hour, N: 10})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, task := range c {
			got = append(got, task.ID)
		}
		if want := []string{"t-a1", "t-c", "t-d", "t-a2", "t-a3", "t-a4", "t-a5"}; !slices.Equal(got, want) {
			t.Fatalf("claimed %v; want %v", got, want)
		}
	})
}

// TestParkedOwnerNotLookedAtKeepsItsOrder: a claim looks at 64 parked
// owners of a model at most; a task of another parked owner met in the
// model's queue (queued after the owner was parked) is parked behind
// the owner's older tasks, not claimed before them, and the next claims
// look at the owners not looked at.
func TestParkedOwnerNotLookedAtKeepsItsOrder(t *testing.T) {
	fundedStores(t, 100, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := imagegentest.NewClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
		s.clock = clock
		const owners = 65
		name := func(i int) string { return fmt.Sprintf("o%02d", i) }
		for i := range owners {
			if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: name(i), Kind: imagegen.LedgerGrant, Amount: 100, Ref: "grant"}); err != nil {
				t.Fatal(err)
			}
			submit(t, s, name(i), name(i)+"-run")
		}
		if n := len(claimIDs(t, s, 64)) + len(claimIDs(t, s, 64)); n != owners {
			t.Fatalf("claimed %d running tasks; want %d", n, owners)
		}
		for i := range owners {
			submit(t, s, name(i), name(i)+"-old")
		}
		if got := claimIDs(t, s, 1); len(got) != 0 {
			t.Fatalf("claimed %v; want none, every owner at its cap", got)
		}
		if n, err := s.rdb.ZCard(ctx, s.k.parkedOwners("m")).Result(); err != nil || n != owners {
			t.Fatalf("%d parked owners (%v); want %d", n, err, owners)
		}
		// o64 sorts last among owners looked at at the same time: the next
		// claim does not look at it. Its slot frees and it queues a task.
		last := name(owners - 1)
		if _, err := s.FailTask(ctx, last+"-run", 1, imagegen.Failure{Code: imagegen.CodeProviderError, Message: "x"}); err != nil {
			t.Fatal(err)
		}
		submit(t, s, last, last+"-new")
		clock.Advance(time.Millisecond)
		if got := claimIDs(t, s, 1); len(got) != 0 {
			t.Fatalf("claimed %v; want none: %s's new task waits behind its parked one", got, last)
		}
		clock.Advance(time.Millisecond)
		if got := claimIDs(t, s, 1); !slices.Equal(got, []string{last + "-old"}) {
			t.Fatalf("claimed %v; want %s-old, its oldest task", got, last)
		}
	})
}

// TestParkingIsBoundedAClaim: a claim parks at most 1024 tasks of a
// model's queue, then passes the queue over, so that its work stays
// bounded however long the backlog of owners at their caps; the next
// claim goes on from there and reaches the tasks behind it.
func TestParkingIsBoundedAClaim(t *testing.T) {
	fundedStores(t, 4000, func(t *testing.T, s *Store) {
		ctx := context.Background()
		// a and c, of weight 1000 (a tag apart a task), each run a task at
		// their cap of one and queue 600 more; b's task (weight 1: 1000
		// tags on) lies behind all 1200 of them.
		for _, owner := range []string{"a", "c"} {
			if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 2000, Ref: "grant"}); err != nil {
				t.Fatal(err)
			}
			if err := s.SetOwnerWeight(ctx, owner, 1000); err != nil {
				t.Fatal(err)
			}
			submit(t, s, owner, "t-"+owner+"-run")
		}
		if got := claimIDs(t, s, 2); len(got) != 2 {
			t.Fatalf("claimed %v; want a's and c's first tasks", got)
		}
		for i := range 600 {
			submit(t, s, "a", fmt.Sprintf("t-a%03d", i))
			submit(t, s, "c", fmt.Sprintf("t-c%03d", i))
		}
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "b", Kind: imagegen.LedgerGrant, Amount: 3, Ref: "grant:b"}); err != nil {
			t.Fatal(err)
		}
		submit(t, s, "b", "t-b")
		if got := claimIDs(t, s, 1); len(got) != 0 {
			t.Fatalf("the first claim took %v; want none: it parks 1024 of the 1200 tasks ahead of t-b, then stops", got)
		}
		parked := 0
		for _, owner := range []string{"a", "c"} {
			n, err := s.rdb.ZCard(ctx, s.k.parked("m", owner)).Result()
			if err != nil {
				t.Fatal(err)
			}
			parked += int(n)
		}
		if parked != 1024 {
			t.Fatalf("the first claim parked %d tasks; want 1024", parked)
		}
		if got := claimIDs(t, s, 1); !slices.Equal(got, []string{"t-b"}) {
			t.Fatalf("the second claim took %v; want t-b", got)
		}
	})
}

// TestParkedOwnerWithNoQueueLeavesTheRecord: an owner noted as parked
// whose parked queue is gone (deleted by hand, say) leaves the record of
// parked owners once a claim merges its queue and finds it empty,
// rather than taking one of the claims' 64 looks for ever.
func TestParkedOwnerWithNoQueueLeavesTheRecord(t *testing.T) {
	fundedStores(t, 100, func(t *testing.T, s *Store) {
		ctx := context.Background()
		running := parkingFixture(t, s)
		if err := s.rdb.Del(ctx, s.k.parked("m", "a")).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FailTask(ctx, running.ID, running.Attempt, imagegen.Failure{Code: imagegen.CodeProviderError, Message: "x"}); err != nil {
			t.Fatal(err)
		}
		if got := claimIDs(t, s, 1); !slices.Equal(got, []string{"t-c"}) {
			t.Fatalf("claimed %v; want t-c", got)
		}
		if n, err := s.rdb.Exists(ctx, s.k.parkedOwners("m"), s.k.parkedModels()).Result(); err != nil || n != 0 {
			t.Fatalf("%d parking records left (%v); want none", n, err)
		}
	})
}
