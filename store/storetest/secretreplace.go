package storetest

import (
	"bytes"
	"sync"
	"testing"

	"github.com/matryer/is"
)

// testReplaceSharedSecret: ReplaceSharedSecret swaps only the value it
// is told is there, whole, and only under its own name.
func testReplaceSharedSecret(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	first := []byte{0, 1, 2, 0xff} // a zero byte and a byte that is no text
	gen := func() []byte { return bytes.Clone(first) }
	get := func(name string) []byte {
		t.Helper()
		v, err := s.SharedSecret(ctx, name, func() []byte { return []byte("made now") })
		is.NoErr(err)
		return v
	}

	ok, err := s.ReplaceSharedSecret(ctx, "webhook:u", nil, []byte("x"))
	is.NoErr(err)
	is.True(!ok)                                   // nothing stored: nothing replaced
	is.Equal(get("webhook:u"), []byte("made now")) // and nothing stored by it

	_, err = s.SharedSecret(ctx, "webhook:v", gen)
	is.NoErr(err)
	_, err = s.SharedSecret(ctx, "webhook:w", gen)
	is.NoErr(err)
	for _, wrong := range [][]byte{nil, {0, 1, 2}, {0, 1, 2, 0xff, 0}, []byte("made now")} {
		ok, err = s.ReplaceSharedSecret(ctx, "webhook:v", wrong, []byte("x"))
		is.NoErr(err)
		is.True(!ok) // not the stored value
	}
	is.Equal(get("webhook:v"), first)

	second := []byte{9, 0, 9, 0, 9}
	ok, err = s.ReplaceSharedSecret(ctx, "webhook:v", first, second)
	is.NoErr(err)
	is.True(ok)
	second[0] = 7                                     // the store kept its own copy
	is.Equal(get("webhook:v"), []byte{9, 0, 9, 0, 9}) // replaced
	is.Equal(get("webhook:w"), first)                 // another name: untouched

	ok, err = s.ReplaceSharedSecret(ctx, "webhook:v", first, []byte("late"))
	is.NoErr(err)
	is.True(!ok) // the value it meant to replace is gone
	is.Equal(get("webhook:v"), []byte{9, 0, 9, 0, 9})
}

// testConcurrentReplaceSharedSecret: of many replacements of the same
// secret at once, exactly one wins, and its value is what is stored.
func testConcurrentReplaceSharedSecret(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	old := []byte("the secret all of them saw")
	_, err := s.SharedSecret(ctx, "webhook:u", func() []byte { return old })
	is.NoErr(err)

	const n = 16
	won := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			won[i], errs[i] = s.ReplaceSharedSecret(ctx, "webhook:u", old, []byte{byte(i)})
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		is.NoErr(errs[i])
		if won[i] {
			is.Equal(winner, -1) // a second winner
			winner = i
		}
	}
	is.True(winner >= 0) // nobody won
	v, err := s.SharedSecret(ctx, "webhook:u", func() []byte { return []byte("made now") })
	is.NoErr(err)
	is.Equal(v, []byte{byte(winner)})
}
