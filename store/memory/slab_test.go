package memory

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// records yields the records of the tasks s holds, by a walk over the
// slab (not over the indexes, which the tests check against it); s.mu
// is held.
func (s *Store) records() iter.Seq[task] {
	return func(yield func(task) bool) {
		for i := slot(1); i < s.recs.next; i++ {
			if r := s.recs.at(i); r.seq != 0 && !yield(r) {
				return
			}
		}
	}
}

// TestSlotReuseKeepsNothing: a task that retention removed frees its
// slot, and the task given that slot next shows nothing of the one
// before (its images, seed, error, callback, lease, times), nor is the
// old task found through it.
func TestSlotReuseKeepsNothing(t *testing.T) {
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Time{})
	s, err := New(Config{Clock: clock, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "b", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	seed := int64(7)
	old := &imagegen.Task{ID: imagegen.NewOwnedID("a"), Owner: "a", Model: "big", Cost: 2, RequestID: "req",
		Request: imagegen.Request{Scene: imagegen.SceneImageToImage, Prompt: "old prompt", Seed: &seed,
			ImageInput: []string{"https://in/1"}, CallbackURL: "https://cb", CallbackEvents: []imagegen.CallbackEvent{imagegen.EventCompleted}}}
	if _, err := s.CreateTask(ctx, old, imagegen.CreateParams{}); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimTask(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetProgress(ctx, c.ID, c.Attempt, 0.5); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{{ID: "img", ContentType: "image/png", Size: 1}}, &seed); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if n, _ := s.Len(); n != 0 {
		t.Fatalf("Len %d after retention, want 0", n)
	}

	clock.Advance(time.Minute)
	fresh := &imagegen.Task{ID: "plain-id", Owner: "b", Model: "m", Cost: 1,
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
	if _, err := s.CreateTask(ctx, fresh, imagegen.CreateParams{}); err != nil {
		t.Fatal(err)
	}
	if s.recs.next != 2 || s.recs.used != 1 {
		t.Fatalf("slab next %d used %d: the freed slot was not reused", s.recs.next, s.recs.used)
	}
	got, err := s.TaskByID(ctx, fresh.ID)
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now()
	want := imagegen.Task{ID: "plain-id", Owner: "b", Model: "m", Cost: 1, Status: imagegen.StatusPending,
		Request:   imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"},
		CreatedAt: now, UpdatedAt: now, RunAfter: now}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("the task in a reused slot:\n got %+v\nwant %+v", *got, want)
	}
	if _, err := s.TaskByID(ctx, old.ID); err == nil {
		t.Fatal("the removed task is still found")
	}
	page, err := s.ListTasks(ctx, "a", "", 10, "")
	if err != nil || len(page.Tasks) != 0 {
		t.Fatalf("ListTasks of the removed task's owner: %d tasks, %v", len(page.Tasks), err)
	}
	all, err := s.ListAllTasks(ctx, imagegen.TaskFilter{}, 10, "")
	if err != nil || len(all.Tasks) != 1 || all.Tasks[0].ID != fresh.ID {
		t.Fatalf("ListAllTasks: %+v, %v", all.Tasks, err)
	}
}

// TestIndexesFollowTheSlab drives a store with random submits (ids
// that are UUIDs and ids that are not), claims, completions, failures,
// cancels, requeues and retention removals that free slots for new
// tasks, and checks after each step that every index and queue agrees
// with the records in the slab (checkIndexes) and that the store
// answers for every id ever submitted as it should.
func TestIndexesFollowTheSlab(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 11))
		clock := imagegentest.NewClock(time.Time{})
		s, err := New(Config{Clock: clock, Retention: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		owners := []string{"a", "b", "c"}
		for _, o := range owners {
			if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: o, Kind: imagegen.LedgerGrant, Amount: 1 << 30, Ref: "g"}); err != nil {
				t.Fatal(err)
			}
		}
		var ids []string
		owner := map[string]string{}
		for step := range 1500 {
			var err error
			switch op := rng.IntN(10); op {
			case 0, 1, 2:
				o := owners[rng.IntN(len(owners))]
				id := imagegen.NewOwnedID(o)
				if rng.IntN(3) == 0 {
					id = fmt.Sprintf("id-%d", len(ids))
				}
				ids = append(ids, id)
				owner[id] = o
				_, err = s.CreateTask(ctx, &imagegen.Task{ID: id, Owner: o, Model: "m", Cost: 1,
					Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: id}}, imagegen.CreateParams{})
			case 3, 4:
				var c *imagegen.Task
				if c, err = s.ClaimTask(ctx, time.Minute); err == nil {
					switch rng.IntN(3) {
					case 0:
						err = s.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{{ID: "img-" + c.ID}}, nil)
					case 1:
						_, err = s.FailTask(ctx, c.ID, c.Attempt, imagegen.Failure{Code: imagegen.CodeInternal, Message: "no"})
					}
				} else if err == imagegen.ErrNoTask {
					err = nil
				}
			case 5:
				if len(ids) > 0 {
					id := ids[rng.IntN(len(ids))]
					_, _ = s.CancelTask(ctx, owner[id], id, imagegen.CancelParams{}) // any state: refusals are fine
				}
			case 6:
				if len(ids) > 0 {
					_ = s.RequeueTask(ctx, ids[rng.IntN(len(ids))], rng.IntN(2) == 0)
				}
			case 7, 8:
				clock.Advance(time.Duration(rng.IntN(30)) * time.Second)
			case 9:
				_, err = s.RecoverExpired(ctx, 2)
			}
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			checkIndexes(t, s, ids, owner)
			if t.Failed() {
				t.Fatalf("seed %d step %d", seed, step)
			}
		}
		// Every slot is used or free, and retention freed slots that new
		// tasks took.
		if int(s.recs.next)-1 != s.recs.used+len(s.recs.free) || int(s.recs.next)-1 >= len(ids) {
			t.Fatalf("seed %d: slab next %d, used %d, free %d for %d tasks", seed, s.recs.next, s.recs.used, len(s.recs.free), len(ids))
		}
	}
}

// checkIndexes checks the store's indexes and queues against the
// records in its slab, and its answers against the ids submitted.
func checkIndexes(t *testing.T, s *Store, ids []string, owner map[string]string) {
	t.Helper()
	ctx := context.Background()
	held := map[string]bool{}
	func() {
		s.lock()
		defer s.mu.Unlock()
		n, pending, processing := 0, 0, 0
		for r := range s.records() {
			n++
			held[r.id()] = true
			if i, ok := s.tasks.get(r.id()); !ok || s.recs.at(i).record != r.record || r.slot != i {
				t.Errorf("task %s: index has slot %d (%v), record says %d", r.id(), i, ok, r.slot)
			}
			switch r.status {
			case statusPending:
				pending++
				if !r.queuedNow() {
					t.Errorf("pending task %s is not queued", r.id())
				}
			case statusProcessing:
				processing++
				if _, ok := s.processing[r.slot]; !ok {
					t.Errorf("processing task %s is not in processing", r.id())
				}
			}
		}
		if s.tasks.len() != n || s.recs.used != n {
			t.Errorf("index holds %d ids, slab says %d used, %d records held", s.tasks.len(), s.recs.used, n)
		}
		for _, i := range s.recs.free {
			if r := s.recs.at(i); !reflect.ValueOf(*r.record).IsZero() || !reflect.ValueOf(*r.side).IsZero() {
				t.Errorf("free slot %d keeps data: %+v %+v", i, *r.record, *r.side)
			}
		}
		if s.pending.Len() != pending || s.queuedCount() != pending {
			t.Errorf("queues hold %d and %d, %d pending", s.pending.Len(), s.queuedCount(), pending)
		}
		if len(s.processing) != processing {
			t.Errorf("processing holds %d, %d processing", len(s.processing), processing)
		}
		if !slices.IsSortedFunc(s.all, func(a, b taskSlot) int { return int(a.seq) - int(b.seq) }) {
			t.Errorf("all is not in submission order")
		}
	}()
	for _, id := range ids {
		got, err := s.TaskByID(ctx, id)
		switch {
		case held[id] && (err != nil || got.ID != id || got.Owner != owner[id] || got.Request.Prompt != id):
			t.Errorf("task %s: %+v, %v", id, got, err)
		case !held[id] && err != imagegen.ErrTaskNotFound:
			t.Errorf("removed task %s: %+v, %v", id, got, err)
		}
	}
	var listed []string
	for _, o := range []string{"a", "b", "c"} {
		page, err := s.ListTasks(ctx, o, "", len(ids)+1, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range page.Tasks {
			if tk.Owner != o {
				t.Errorf("ListTasks(%s) lists %s of %s", o, tk.ID, tk.Owner)
			}
			listed = append(listed, tk.ID)
		}
	}
	all, err := s.ListAllTasks(ctx, imagegen.TaskFilter{}, len(ids)+1, "")
	if err != nil {
		t.Fatal(err)
	}
	var allIDs []string
	for _, tk := range all.Tasks {
		allIDs = append(allIDs, tk.ID)
	}
	for _, l := range [][]string{listed, allIDs} {
		slices.Sort(l)
		if distinct := len(slices.Compact(slices.Clone(l))); len(l) != len(held) || distinct != len(l) {
			t.Errorf("listed %d tasks (%d distinct), %d held", len(l), distinct, len(held))
		}
		for _, id := range l {
			if !held[id] {
				t.Errorf("listed %s, which the store does not hold", id)
			}
		}
	}
}

// queuedCount is how many tasks the models' queues hold, their parked
// queues included, or -1 when a model's parked owners' lists do not hold
// its parked tasks; s.mu is held.
func (s *Store) queuedCount() int {
	n := 0
	for _, m := range s.models {
		n += m.queue.count(m.queue.root) + m.parked.count(m.parked.root)
		parked := 0
		for _, p := range m.parkedOwners {
			parked += len(p.tasks)
		}
		if parked != m.parked.count(m.parked.root) {
			return -1 // the owners' lists disagree with the parked queue
		}
	}
	return n
}
