package console

import (
	"testing"
	"time"
)

// ?wait= is capped at maxPollWait before it becomes a Duration: a count
// of seconds that overflows one (or an int) still waits the most, not
// at all.
func TestPollWaitIsCappedBeforeItOverflows(t *testing.T) {
	for q, want := range map[string]time.Duration{
		"":                        0,
		"soon":                    0,
		"-3":                      0,
		"0":                       0,
		"3":                       3 * time.Second,
		"25":                      maxPollWait,
		"26":                      maxPollWait,
		"9223372037":              maxPollWait, // × time.Second overflows int64
		"99999999999999999999999": maxPollWait, // overflows int
		"-99999999999999999999":   0,
	} {
		if got := pollWait(q); got != want {
			t.Errorf("?wait=%s: %v, want %v", q, got, want)
		}
	}
}
