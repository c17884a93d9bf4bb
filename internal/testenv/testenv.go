// Package testenv holds the project's test scaffolding, apart from the
// runtime packages of internal/ so that those sit at the bottom of the
// package graph and only tests reach up to the high-level packages:
//
//   - apitest: the service and its HTTP API on the memory store, for
//     tests of httpapi, client and the examples;
//   - pgtest, redistest, s3test: a schema, key prefix or bucket of its
//     own per test, on the services named by IMAGEGEN_TEST_POSTGRES,
//     IMAGEGEN_TEST_REDIS and IMAGEGEN_TEST_S3, or on in-process fakes;
//   - Eventually (this package): the one bounded poll that tests use to
//     wait for other goroutines or processes.
//
// Nothing outside tests imports these packages.
package testenv

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen/store/memory"
)

// Eventually polls cond until it holds, and fails the test, saying what
// it waited for, if it does not within limit. It waits for other
// goroutines or processes to catch up and measures nothing: the pause
// between polls starts at a millisecond and doubles up to 20 ms, so a
// quick condition is seen at once and a slow one is not polled hot.
func Eventually(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 20*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(pause)
	}
}

// Memory is a memory store of c for a test, which fails at once if c is
// refused.
func Memory(t testing.TB, c memory.Config) *memory.Store {
	t.Helper()
	s, err := memory.New(c)
	if err != nil {
		t.Fatalf("memory store: %v", err)
	}
	return s
}
