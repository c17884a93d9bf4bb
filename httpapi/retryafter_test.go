package httpapi_test

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen/httpapi"
)

// A client that waits the Retry-After it was given must not be refused
// again: the value rounds up, and is never 0.
func TestRetryAfterSecondsRoundsUp(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		0:                        1,
		-time.Second:             1,
		time.Nanosecond:          1,
		time.Second:              1,
		time.Second + 1:          2,
		1400 * time.Millisecond:  2,
		59500 * time.Millisecond: 60,
		time.Minute:              60,
	} {
		if got := httpapi.RetryAfterSeconds(d); got != want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}
