package imagegen

import "time"

// Clock tells the time. Tests inject a manual clock (imagegentest.Clock)
// and advance it instead of sleeping.
type Clock interface {
	Now() time.Time
	// After waits for d to pass on this clock, like time.After.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
