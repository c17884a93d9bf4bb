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
