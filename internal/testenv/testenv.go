// Package testenv holds the project's test scaffolding, apart from the
// runtime packages of internal/ so that those sit at the bottom of the
// package graph and only tests reach up to the high-level packages:
//
//   - apitest: the service and its HTTP API on the memory store, for
//     tests of httpapi, client and the examples;
//   - pgtest, redistest, s3test: a schema, key prefix or bucket of its
//     own per test, on the services named by IMAGEGEN_TEST_POSTGRES,
//     IMAGEGEN_TEST_REDIS and IMAGEGEN_TEST_S3, or on in-process fakes;
//   - Eventually and EventuallyNoError (this package): the one bounded
//     poll that tests use to wait for other goroutines or processes (the
//     second says what it saw last when the wait fails).
//
// Nothing outside tests imports these packages.
package testenv

import (
	"testing"

	"github.com/imagegen/imagegen/store/memory"
)

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
