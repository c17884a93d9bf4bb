package redis_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	blobredis "github.com/imagegen/imagegen/blob/redis"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// On a Cluster whose blobs are spread over the shards (Config.KeyTag, as
// the sharded Redis store sets it), List scans every master at once but
// calls fn from one goroutine at a time, as BlobStore.List promises (the
// service's blob sweep counts in fn), and calls it no more once it
// returned an error.
func TestClusterListCallsFnOneAtATime(t *testing.T) {
	rdb := redistest.StartCluster(t, 3).Client(t)
	ctx := context.Background()
	s, err := blobredis.New(rdb, blobredis.Config{
		KeyTag:      func(key string) string { return "{blobs-" + key[:1] + "}" },
		ListPattern: "{blobs-*}:blob:*",
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 24 // keys of 24 tags: every master holds some
	for i := range n {
		key := fmt.Sprintf("%c-blob", 'a'+i)
		if err := s.Put(ctx, key, bytes.NewReader([]byte("x")), 1, "image/png"); err != nil {
			t.Fatal(err)
		}
	}

	var inside, overlaps, calls atomic.Int32
	err = s.List(ctx, func(imagegen.BlobInfo) error {
		calls.Add(1)
		if inside.Add(1) > 1 {
			overlaps.Add(1)
		}
		time.Sleep(5 * time.Millisecond) // room for another master's call to come in meanwhile
		inside.Add(-1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != n || overlaps.Load() != 0 {
		t.Fatalf("List called fn %d times for %d blobs, %d of them while another call ran", calls.Load(), n, overlaps.Load())
	}

	stop := errors.New("enough")
	calls.Store(0)
	err = s.List(ctx, func(imagegen.BlobInfo) error {
		calls.Add(1)
		return stop
	})
	if !errors.Is(err, stop) || calls.Load() != 1 {
		t.Fatalf("after fn's error, List returned %v with fn called %d times; want the error, after 1 call", err, calls.Load())
	}
}
