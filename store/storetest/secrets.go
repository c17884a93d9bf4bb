package storetest

import (
	"bytes"
	"testing"

	"github.com/matryer/is"
)

func testSharedSecret(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	calls := 0
	gen := func() []byte { calls++; return []byte{byte(calls), 2, 3} }
	a, err := s.SharedSecret(ctx, "webhook:u", gen)
	is.NoErr(err)
	b, err := s.SharedSecret(ctx, "webhook:u", gen)
	is.NoErr(err)
	is.True(bytes.Equal(a, b)) // the first one stays
	is.Equal(a, []byte{1, 2, 3})
	c, err := s.SharedSecret(ctx, "webhook:v", gen)
	is.NoErr(err)
	is.True(!bytes.Equal(a, c))
}
