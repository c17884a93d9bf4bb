// Package memory is an in-process imagegen.Store: tasks, the work queue
// with leases, images, the credit ledger and API keys, all behind one
// mutex. It suits a single process (tests, demos, a small deployment);
// several processes share state through store/redis instead.
//
// Finished tasks and their image records are removed after the retention
// period. Image bytes are in Config.Blobs. The default, a blob/memory
// store of its own, loses an image's bytes with its record; with any
// other BlobStore, imagegen.Service.SweepBlobs removes the bytes whose
// record is gone.
// The credit ledger is append-only and kept whole for the life of the
// process, so a balance can always be checked against its entries.
//
// A task is kept in a compact form (record.go), not as the
// imagegen.Task it was given: a store holding hundreds of thousands of
// tasks would otherwise spend much of its process's CPU in the garbage
// collector, following each task's two dozen pointers at every cycle.
// A task's record has no pointers: its status is a number, and its
// times are kept as seconds and nanoseconds (a task's times are read
// back in the location of the clock's time when the store was made, the
// local one with the system clock, without a monotonic reading, as the
// other backends return them). Its strings are in one string, beside
// the record.
//
// The tasks live in a slab of chunks (slab.go), and the store's
// indexes, queues and lists name a task by its slot, a number, not by
// a pointer: the task index (taskindex.go) keeps an id that is a UUID
// as its sixteen bytes, the pending queues link slots, and the lists
// that may outlive a task (ListTasks's, ListAllTasks's, the expiries)
// hold its slot and submission seq, which tells whether the slot still
// holds it. The ledger keeps a task's charge and refund references as
// the id's bytes too (ledgerrefs.go). None of them has a pointer for
// the collector to follow; a slot that retention frees is zeroed and
// reused. A pending task then costs the collector its one string, where
// it had about eleven pointers to follow (BenchmarkCollectTasks).
package memory

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/imagegen/imagegen"
	blobmemory "github.com/imagegen/imagegen/blob/memory"
	"github.com/imagegen/imagegen/store/internal/taskwatch"
)

var _ imagegen.Store = (*Store)(nil)

// DefaultRetention is how long finished tasks and images are kept when
// Config.Retention is zero.
const DefaultRetention = 24 * time.Hour

// Config configures a Store.
type Config struct {
	// Clock tells the store's time (leases, run-after, retention).
	// Default: imagegen.SystemClock.
	Clock imagegen.Clock
	// Retention is how long a finished task and its images are kept.
	// Default: DefaultRetention.
	Retention time.Duration
	// Blobs keeps image bytes. Default: a blob/memory store.
	Blobs imagegen.BlobStore
}

// Store is the in-memory store. It is safe for concurrent use.
type Store struct {
	clock     imagegen.Clock
	loc       *time.Location // where the tasks' times are read (the clock's location)
	retention time.Duration
	blobs     imagegen.BlobStore
	ownBlobs  *blobmemory.Store // the default blobs, emptied with the records

	mu         sync.Mutex
	seq        uint64
	recs       slab          // the tasks' records
	tasks      taskIndex     // task id -> slot
	pending    runAfterQueue // pending tasks in RunAfter order (stats)
	vtime      int64         // the largest tag claimed so far
	walk       []queueCursor // the cursors of a walk of the models' queues (see cursors)
	walks      uint64        // the walks started, each's number (see cursors)
	owners     map[string]*ownerState
	models     map[string]*modelState
	processing map[slot]struct{} // leased tasks, for lease recovery
	expiring   taskExpiryQueue   // finished tasks, oldest expiry first
	images     map[string]*imagegen.Image
	accounts   map[string]*account
	keys       map[string]*imagegen.APIKey // by hash
	ownerKeys  map[string][]string         // owner -> key hashes, in creation order

	watchers taskwatch.Set // WatchTask channels

	ownerTasks map[string][]taskSlot // owner -> tasks, oldest first (ListTasks)
	// all holds every task in submission order (ListAllTasks); tasks
	// that retention removed stay until compactAll, allGone counts them.
	all          []taskSlot
	allGone      int
	idem         map[string]idemRecord // owner\x00key -> idempotency record
	idemExpiring expiryQueue
	hooks        map[string]*hook  // task id -> callback delivery
	secrets      map[string][]byte // SharedSecret

	sessions         map[string]imagegen.Session    // console sessions by id
	ownerSessions    map[string]map[string]struct{} // owner -> session ids
	sessionsExpiring expiryQueue

	provStats providerStats // AddProviderStats, under its own mutex
}

// New returns an empty Store, or an error naming a bad field (a negative
// Retention), as the other backends' New do.
func New(o Config) (*Store, error) {
	if o.Retention < 0 {
		return nil, fmt.Errorf("memory store: Config.Retention must not be negative (got %v)", o.Retention)
	}
	clock := cmp.Or[imagegen.Clock](o.Clock, imagegen.SystemClock{})
	var own *blobmemory.Store
	blobs := o.Blobs
	if blobs == nil {
		own = blobmemory.New(blobmemory.Config{Clock: clock})
		blobs = own
	}
	s := &Store{
		clock:      clock,
		loc:        clock.Now().Location(),
		retention:  cmp.Or(o.Retention, DefaultRetention),
		blobs:      blobs,
		ownBlobs:   own,
		tasks:      newTaskIndex(),
		processing: make(map[slot]struct{}),
		owners:     make(map[string]*ownerState),
		models:     make(map[string]*modelState),
		images:     make(map[string]*imagegen.Image),
		accounts:   make(map[string]*account),
		keys:       make(map[string]*imagegen.APIKey),
		ownerKeys:  make(map[string][]string),
		ownerTasks: make(map[string][]taskSlot),
	}
	s.pending.recs = &s.recs
	return s, nil
}

// find returns task id; s.mu is held.
func (s *Store) find(id string) (task, bool) {
	i, ok := s.tasks.get(id)
	if !ok {
		return task{}, false
	}
	return s.recs.at(i), true
}

// lookup returns the task t names, if the store still holds it; s.mu is
// held.
func (s *Store) lookup(t taskSlot) (task, bool) {
	r := s.recs.at(t.slot)
	return r, r.seq == t.seq
}

// lock takes the mutex, removes what has expired, and returns the time.
// Every method that reads or writes what expires starts with it, so
// expired data is never returned (KeyByHash, which reads only keys,
// takes the mutex alone).
func (s *Store) lock() time.Time {
	s.mu.Lock()
	now := s.clock.Now()
	s.sweep(now)
	return now
}

// sweep removes what has expired by now and returns how many tasks it
// removed; s.mu is held.
func (s *Store) sweep(now time.Time) int {
	n := 0
	at := stampOf(now)
	for len(s.expiring) > 0 && !at.before(s.expiring[0].at) {
		e := heap.Pop(&s.expiring).(taskExpiry)
		if r, ok := s.lookup(e.task); ok && r.expiresAt == e.at {
			for _, img := range r.images() {
				delete(s.images, img)
				if s.ownBlobs != nil {
					_ = s.ownBlobs.Delete(context.Background(), img) // in memory: cannot fail
				}
			}
			owner := r.owner() // read before its slot is released
			s.tasks.delete(r.id())
			s.recs.release(r.slot)
			s.allGone++
			n++
			s.forgetOwnerTasks(owner)
		}
	}
	s.sweepIdem(now)
	s.sweepSessions(now)
	return n
}

// Len reports how many tasks and images the store holds, expired ones
// excluded. Operators and tests use it to see retention at work.
func (s *Store) Len() (tasks, images int) {
	s.lock()
	defer s.mu.Unlock()
	return s.tasks.len(), len(s.images)
}

// TaskRetention is how long the store keeps a finished task and its
// images (Config.Retention, or DefaultRetention): the Service keeps no
// idempotency record longer (imagegen.TaskRetainer).
func (s *Store) TaskRetention() time.Duration { return s.retention }
