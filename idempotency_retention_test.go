package imagegen_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/store/postgres"
	"github.com/imagegen/imagegen/store/redis"
)

// ttlRecorder is a Store that keeps its finished tasks for retention
// (imagegen.TaskRetainer) and records the ttl of each idempotency record
// it is asked to finish.
type ttlRecorder struct {
	imagegen.Store
	retention time.Duration
	mu        sync.Mutex
	ttls      []time.Duration
}

func (r *ttlRecorder) TaskRetention() time.Duration { return r.retention }

func (r *ttlRecorder) FinishIdempotent(ctx context.Context, owner, key, fingerprint string, status int, body []byte, ttl time.Duration) error {
	r.mu.Lock()
	r.ttls = append(r.ttls, ttl)
	r.mu.Unlock()
	return r.Store.FinishIdempotent(ctx, owner, key, fingerprint, status, body, ttl)
}

// A key's record outliving its task would let the retry that settles a
// submission of unknown outcome ask for the id of a task retention has
// removed, which a store that keeps no trace of it (the Redis store)
// would make and charge again. The service keeps a record no longer
// than a store that says how long it keeps its tasks keeps them,
// whatever Config.IdempotencyTTL asks (its default, a day, here).
func TestIdempotencyRecordsLiveNoLongerThanTasks(t *testing.T) {
	is := is.New(t)
	rec := &ttlRecorder{retention: time.Hour}
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) { rec.Store = c.Store; c.Store = rec })
	f.funded(t, "alice", 5)
	_, _, err := f.svc.SubmitIdempotent(ctx, "alice", imagegen.Idempotency{Key: "k", Fingerprint: "f"},
		func() (imagegen.Request, error) { return textReq, nil })
	is.NoErr(err)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	is.Equal(rec.ttls, []time.Duration{time.Hour}) // the store's retention, not the default day
}

// The stores of this repository say how long they keep their tasks.
var (
	_ imagegen.TaskRetainer = (*memory.Store)(nil)
	_ imagegen.TaskRetainer = (*redis.Store)(nil)
	_ imagegen.TaskRetainer = (*postgres.Store)(nil)
)
