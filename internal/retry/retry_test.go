package retry

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	for n, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		if got := Backoff(n, time.Second, 10*time.Second, false); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, want)
		}
		for range 50 {
			if got := Backoff(n, time.Second, 10*time.Second, true); got < want/2 || got > want {
				t.Fatalf("jittered Backoff(%d) = %v, want in [%v, %v]", n, got, want/2, want)
			}
		}
	}
	if got := Backoff(3, 0, time.Minute, true); got != 0 {
		t.Errorf("a zero base gives %v, want 0", got)
	}
}

func TestAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{map[string]string{"Retry-After": "7"}, 7 * time.Second, true},
		{map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "junk", "Retry-After": "9"}, 9 * time.Second, true},
		{map[string]string{"Retry-After": "-3"}, 0, false},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After": "NaN"}, 0, false},
		{map[string]string{"Retry-After": "Inf"}, 0, false},
		{map[string]string{}, 0, false},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		got, ok := After(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("After(%v) = %v, %v; want %v, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}

// Doubling waits Min first, doubles up to Max, and starts again from Min
// after Reset.
func TestDoubling(t *testing.T) {
	d := Doubling{Min: time.Second, Max: 5 * time.Second}
	var got []time.Duration
	for range 5 {
		got = append(got, d.Next())
	}
	d.Reset()
	got = append(got, d.Next(), d.Next())
	want := []time.Duration{1, 2, 4, 5, 5, 1, 2}
	for i := range want {
		want[i] *= time.Second
	}
	if !slices.Equal(got, want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
}
