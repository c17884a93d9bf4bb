package imagegen_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// unreadableRecords is a store whose Image fails for the keys bad says,
// as for a record the store cannot decode, or a store that is down.
type unreadableRecords struct {
	imagegen.Store
	bad     func(key string) bool
	lookups *atomic.Int64
}

var errUndecodable = errors.New("record cannot be decoded")

func (s unreadableRecords) Image(ctx context.Context, id string) (*imagegen.Image, error) {
	s.lookups.Add(1)
	if s.bad(id) {
		return nil, errUndecodable
	}
	return s.Store.Image(ctx, id)
}

// unreadable wraps the fixture's store so that bad's records fail to
// read, counting the lookups.
func unreadable(bad func(string) bool, lookups *atomic.Int64) func(*imagegen.Config) {
	return func(c *imagegen.Config) { c.Store = unreadableRecords{Store: c.Store, bad: bad, lookups: lookups} }
}

// putOldBlobs puts a blob under each key, then moves the clock past the
// grace.
func putOldBlobs(t *testing.T, f fixture, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if err := f.store.Blobs().Put(ctx, k, bytes.NewReader([]byte("png")), 3, "image/png"); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.Advance(10*time.Minute + time.Second)
}

// One record that cannot be read keeps its blob, and the sweep goes on
// past it: the orphans listed before and after it are deleted, and the
// error says which record failed. The sweep used to end at the first
// such record, every time, so the blobs after it were never deleted.
func TestSweepGoesOnPastARecordItCannotRead(t *testing.T) {
	is := is.New(t)
	var lookups atomic.Int64
	f := newFixture(t, imagegentest.NewModel(1), onBlobs(t, nil), unreadable(func(k string) bool { return k == "m-bad" }, &lookups))
	putOldBlobs(t, f, "a-orphan", "m-bad", "z-orphan")

	n, err := f.svc.SweepBlobs(ctx)
	is.True(errors.Is(err, errUndecodable)) // said, with the blob's key
	is.Equal(n, 2)                          // both orphans, whichever side of it they were listed on
	is.Equal(blobKeys(t, f.store), map[string]bool{"m-bad": true})
}

// A store that fails every lookup (down) ends the sweep after 100
// blobs, and none is deleted.
func TestSweepEndsWhenRecordsCannotBeRead(t *testing.T) {
	is := is.New(t)
	var lookups atomic.Int64
	f := newFixture(t, imagegentest.NewModel(1), onBlobs(t, nil), unreadable(func(string) bool { return true }, &lookups))
	keys := make([]string, 150)
	for i := range keys {
		keys[i] = fmt.Sprintf("blob-%03d", i)
	}
	putOldBlobs(t, f, keys...)

	n, err := f.svc.SweepBlobs(ctx)
	is.True(errors.Is(err, errUndecodable))
	is.Equal(n, 0)
	is.Equal(lookups.Load(), int64(100)) // then it stopped
	is.Equal(len(blobKeys(t, f.store)), 150)
}
