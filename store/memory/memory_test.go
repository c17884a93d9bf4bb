package memory_test

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		return storetest.Harness{
			Store:     memory.New(memory.Config{Clock: clock, Retention: time.Hour}),
			Advance:   clock.Advance,
			Retention: time.Hour,
		}
	})
}
