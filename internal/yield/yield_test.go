package yield

import "testing"

func TestWhileGrowingStopsWhenNothingIsAdded(t *testing.T) {
	adds := []int{3, 2, 0, 5} // the 5 must never be taken
	calls := 0
	got := WhileGrowing(1, 100, func(n int) int {
		add := adds[calls]
		calls++
		return n + add
	})
	if got != 6 || calls != 3 {
		t.Fatalf("WhileGrowing = %d after %d yields; want 6 after 3", got, calls)
	}
}

func TestWhileGrowingStopsAtTheLimit(t *testing.T) {
	calls := 0
	got := WhileGrowing(0, 10, func(n int) int { calls++; return n + 4 })
	if got != 12 || calls != 3 {
		t.Fatalf("WhileGrowing = %d after %d yields; want 12 after 3", got, calls)
	}
	if got := WhileGrowing(10, 10, func(int) int { t.Fatal("yielded at the limit"); return 0 }); got != 10 {
		t.Fatalf("WhileGrowing at the limit = %d; want 10", got)
	}
}
