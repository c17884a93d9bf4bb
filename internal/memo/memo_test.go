package memo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Of answers f's result for every argument, also when arguments share
// a slot and push each other out.
func TestOfIsTheFunction(t *testing.T) {
	m := New(hash)
	args := make([]string, 3*slots) // more arguments than slots: every slot is shared
	for i := range args {
		args[i] = fmt.Sprintf("key-%04d-0123456789abcdef", i)
	}
	args = append(args, "key-0000-0123456789abcdeF", "key-0000-0123456789abcde") // near misses of the first
	for round := range 3 {
		for _, a := range args {
			if got, want := m.Of(a), hash(a); got != want {
				t.Fatalf("round %d: Of(%q) is %s, want %s", round, a, got, want)
			}
		}
	}
}

// A result is made once while its argument keeps its slot.
func TestOfRemembers(t *testing.T) {
	calls := 0
	m := New(func(s string) string { calls++; return hash(s) })
	m.Of("bench-key-0123456789abcdef")
	if n := testing.AllocsPerRun(100, func() { m.Of("bench-key-0123456789abcdef") }); n != 0 {
		t.Fatalf("%v allocations for an argument seen before", n)
	}
	if calls != 1 {
		t.Fatalf("f ran %d times for one argument", calls)
	}
}
