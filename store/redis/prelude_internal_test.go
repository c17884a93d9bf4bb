package redis

import (
	"strings"
	"testing"
)

// definedIn lists the prelude names that script defines.
func definedIn(script string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(script, "\n") {
		if m := preludeDecl.FindStringSubmatch(line); m != nil {
			names[m[1]] = true
		}
	}
	return names
}

func TestPreludeForTakesWhatTheBodyUses(t *testing.T) {
	got := definedIn(preludeFor("local now = now_ms()\n-- refund is not called here\nfinish(KEYS[1], KEYS[2], ARGV[2], 'success', now, 1000, KEYS[3], nil)\n"))
	// finish and what it calls, directly or not.
	for _, name := range []string{"now_ms", "finish", "stop_running", "wants_of", "keep_listed", "int", "skey", "store_tag"} {
		if !got[name] {
			t.Errorf("preludeFor misses %s, which the body needs; has %v", name, got)
		}
	}
	for _, name := range []string{"refund", "next_tag", "enqueue", "holds", "num"} {
		if got[name] {
			t.Errorf("preludeFor carries %s, which the body does not use (only a comment names refund)", name)
		}
	}
}

func TestPreludeForKeepsThePreludesOrder(t *testing.T) {
	all := preludeFor(prelude) // a body naming every definition takes them all
	if want := definedIn(prelude); len(definedIn(all)) != len(want) {
		t.Fatalf("preludeFor(prelude) defines %v, want %v", definedIn(all), want)
	}
	if strings.TrimSpace(all) != strings.TrimSpace(prelude) {
		t.Errorf("preludeFor(prelude) is not the prelude in its own order")
	}
}
