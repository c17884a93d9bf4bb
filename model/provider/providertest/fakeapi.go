package providertest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// FakeAPI is what every fake provider API has, embedded in it: the
// Script of its calls (C is the fake's record of one), the test it
// serves, its server on 127.0.0.1, the wire examples of the package's
// TestData, and pictures to answer with.
type FakeAPI[C any] struct {
	Script[C]
	T        *testing.T
	Server   *httptest.Server
	Examples *Examples
	PNGs     PNGs
}

// Start loads the examples and serves handler (the fake's) until t
// ends. Call it on the test's goroutine.
func (a *FakeAPI[C]) Start(t *testing.T, handler http.HandlerFunc) {
	t.Helper()
	a.T = t
	a.Examples = LoadExamples(t, TestData)
	a.Server = httptest.NewServer(handler)
	t.Cleanup(a.Server.Close)
}
