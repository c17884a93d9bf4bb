// Package providertest has test helpers for provider adapters.
//
// Run is the conformance suite every adapter's tests call: the scenarios
// every provider must get right (text-to-image, image-to-image, every
// aspect ratio, refusals, a rate limit then success, server errors then
// success, time-outs, a bad key, cancelling the provider's job when the
// caller gives up, sending the task's seed), driven through a small per-adapter Harness that says
// how to build the adapter against its fake API and how the fake
// answers each scenario.
//
// For those fakes: what every fake has, embedded (FakeAPI: the Script
// of canned answers and recorded calls, the server, the wire examples
// read from the package's testdata directory on the test's goroutine),
// a hanging answer (Answer.Hang), multipart forms, JSON example edits
// and OpenAPI routing (Spec, OpenAPIRouter read testdata too). For the
// adapter under test: a clock that records waits and lets them pass at
// once (InstantClock), a scripted image fetcher, a slowloris image host
// (Drip), PNG/JPEG makers, the
// set-up (Configure, MustNew), a check that a key never shows up in
// printed or logged values, and Demo, what the adapters' examples
// print. No network beyond loopback, no sleeps.
//
// Helpers that can fail a test at once (Spec, Must, JSON, ModelError and
// the like call t.Fatal) are for the test's own goroutine: a t.Fatal or
// t.Skip from a fake's handler would stop only the handler. What a
// handler calls (Examples.Get, EditJSON, Answer.Serve) records errors
// with t.Errorf, which is safe from any goroutine.
package providertest
