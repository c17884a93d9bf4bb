package memory_test

import (
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobtest"
	"github.com/imagegen/imagegen/blob/memory"
)

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) imagegen.BlobStore {
		return memory.New(memory.Config{})
	})
}

// onlyBlobStore hides every method but BlobStore's, so the suite reads
// ranges through imagegen.ReadBlobRange's fallback (Open, Seek, limit),
// which BlobStores of other modules get.
type onlyBlobStore struct{ imagegen.BlobStore }

func TestConformanceWithoutReadRange(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) imagegen.BlobStore {
		return onlyBlobStore{memory.New(memory.Config{})}
	})
}
