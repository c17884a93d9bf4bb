package waitslots_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/internal/waitslots"
)

func TestTakeIsPerKeyUpToMax(t *testing.T) {
	is := is.New(t)
	s := waitslots.New(2)
	is.True(s.Take("alice"))
	is.True(s.Take("alice"))
	is.True(!s.Take("alice")) // alice holds two
	is.True(s.Take("bob"))    // bob has his own
	s.Give("alice")
	is.Equal(s.Held("alice"), 1)
	is.True(s.Take("alice")) // a given slot is free again
	s.Give("alice")
	s.Give("alice")
	is.Equal(s.Held("alice"), 0)
}

func TestNegativeMaxIsUnbounded(t *testing.T) {
	is := is.New(t)
	s := waitslots.New(-1)
	for range 100 {
		is.True(s.Take("alice"))
	}
	s.Give("alice")
	is.Equal(s.Held("alice"), 0) // nothing is counted
}

func TestZeroMaxAllowsNone(t *testing.T) {
	is.New(t).True(!waitslots.New(0).Take("alice"))
}
