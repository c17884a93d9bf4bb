package testenv

import (
	"errors"
	"testing"
	"time"
)

// Eventually polls cond until it holds, and fails the test, saying what
// it waited for, if it does not within limit. It waits for other
// goroutines or processes to catch up and measures nothing: the pause
// between polls starts at a millisecond and doubles up to 20 ms, so a
// quick condition is seen at once and a slow one is not polled hot.
func Eventually(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := poll(limit, func() error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	}); err != nil {
		t.Fatalf("waited %v for %s", limit, what)
	}
}

// EventuallyNoError is Eventually for a condition that says why it does
// not hold yet: it polls cond until it returns nil, and fails the test
// with what and the last error cond returned (the state last seen) if it
// does not within limit.
func EventuallyNoError(t testing.TB, limit time.Duration, what string, cond func() error) {
	t.Helper()
	if err := poll(limit, cond); err != nil {
		t.Fatalf("waited %v for %s; last seen: %v", limit, what, err)
	}
}

// poll calls cond until it returns nil or limit has passed, and returns
// its last error then.
func poll(limit time.Duration, cond func() error) error {
	deadline := time.Now().Add(limit)
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause)
	}
}
