package imagegen_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// sortedBlobs lists its blobs in the order of their keys, so that a test
// knows which come first.
type sortedBlobs struct{ imagegen.BlobStore }

func (s sortedBlobs) List(ctx context.Context, fn func(imagegen.BlobInfo) error) error {
	var infos []imagegen.BlobInfo
	if err := s.BlobStore.List(ctx, func(b imagegen.BlobInfo) error { infos = append(infos, b); return nil }); err != nil {
		return err
	}
	slices.SortFunc(infos, func(a, b imagegen.BlobInfo) int { return strings.Compare(a.Key, b.Key) })
	for _, b := range infos {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

// More than 100 blobs whose records cannot be read, listed before an
// orphan: every sweep ended at the 100th of them, the same ones each
// time, so the orphan (and any blob listed after them) was never
// deleted. A sweep remembers the blobs whose records it could not read
// and skips them in the next sweeps, so each goes on further than the
// last; once one has gone through the listing they are read again.
func TestSweepReachesOrphansListedAfterManyUnreadableRecords(t *testing.T) {
	is := is.New(t)
	var lookups atomic.Int64
	f := newFixture(t, imagegentest.NewModel(1),
		onBlobs(t, func(b imagegen.BlobStore) imagegen.BlobStore { return sortedBlobs{b} }),
		unreadable(func(k string) bool { return strings.HasPrefix(k, "bad-") }, &lookups))
	var keys []string
	for i := range 150 {
		keys = append(keys, fmt.Sprintf("bad-%03d", i))
	}
	keys = append(keys, "orphan-1", "orphan-2") // listed after every bad one
	putOldBlobs(t, f, keys...)

	n, err := f.svc.SweepBlobs(ctx)
	is.True(errors.Is(err, errUndecodable))
	is.Equal(n, 0)
	is.Equal(lookups.Load(), int64(100)) // it stopped there, as for a store that is down

	lookups.Store(0)
	n, err = f.svc.SweepBlobs(ctx)
	is.True(errors.Is(err, errUndecodable)) // the 50 it read this time
	is.Equal(n, 2)                          // the orphans after them
	is.Equal(lookups.Load(), int64(52))     // the first 100 not read again
	left := blobKeys(t, f.store)
	is.Equal(len(left), 150)
	is.True(!left["orphan-1"] && !left["orphan-2"])

	// That sweep went through the listing: the next reads them again.
	lookups.Store(0)
	_, err = f.svc.SweepBlobs(ctx)
	is.True(errors.Is(err, errUndecodable))
	is.Equal(lookups.Load(), int64(100))
}
