// Package blobtest is the conformance suite for imagegen.BlobStore.
// Every implementation runs it from its own tests, on a store made by a
// NewFunc:
//
//	func TestConformance(t *testing.T) {
//		blobtest.Run(t, func(t *testing.T) imagegen.BlobStore {
//			return memory.New(memory.Config{})
//		})
//	}
//
// Tests name their keys with a random prefix of their own and delete
// what they wrote, so the suite may run against a shared service (a real
// Redis, a real bucket). Nothing in the suite knows the backend.
package blobtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/imagegen/imagegen"
)

// NewFunc returns the store under test. It registers its own cleanup
// with t.Cleanup.
type NewFunc func(t *testing.T) imagegen.BlobStore

// Run runs every conformance test as a subtest of t.
func Run(t *testing.T, newStore NewFunc) {
	tests := []struct {
		name string
		fn   func(*testing.T, imagegen.BlobStore)
	}{
		{"PutThenOpenReadsTheBytes", testPutOpen},
		{"StatWithoutReading", testStat},
		{"MissingKeyIsErrBlobNotFound", testMissing},
		{"PutReplaces", testReplace},
		{"DeleteIsIdempotent", testDelete},
		{"ShortOrLongBodyStoresNothing", testSizeMismatch},
		{"InvalidKeysAreRefused", testInvalidKeys},
		{"SeekReadsOnlyFromThere", testSeek},
		{"ReadRangeReadsExactlyIt", testReadRange},
		{"LargeBlobStreams", testLarge},
		{"ListSeesEveryBlob", testList},
		{"ListStopsOnError", testListStops},
		{"ConcurrentPutsAndReads", testConcurrent},
		{"EmptyBlob", testEmpty},
	}
	// Presigning is optional: its case runs for stores that offer it.
	if _, ok := newStore(t).(imagegen.BlobPresigner); ok {
		tests = append(tests, struct {
			name string
			fn   func(*testing.T, imagegen.BlobStore)
		}{"PresignedURLServesTheBytes", testPresign})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

var ctx = context.Background()

// keys returns a function naming the test's keys under a random prefix,
// and deletes every key it named when the test ends.
func keys(t *testing.T, s imagegen.BlobStore) func(name string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "blobtest-" + hex.EncodeToString(b) + "-"
	var named []string
	t.Cleanup(func() {
		for _, k := range named {
			_ = s.Delete(context.Background(), k)
		}
	})
	return func(name string) string {
		k := prefix + name
		named = append(named, k)
		return k
	}
}
