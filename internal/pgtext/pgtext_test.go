package pgtext

import "testing"

func TestStorable(t *testing.T) {
	for s, want := range map[string]bool{"": true, "plain": true, "ünïcode ✓": true, "a\x00b": false, "\xff": false, "a\xc0\x80": false} {
		if got := Storable(s); got != want {
			t.Errorf("Storable(%q) = %v; want %v", s, got, want)
		}
	}
}
