package providertest

import (
	"net/http"
	"testing"
	"time"

	"github.com/imagegen/imagegen/model/provider"
)

// ContextBound fails t unless c is a client whose answers are bounded by
// the context alone, as provider.ContextBoundHTTPClient makes it: no
// Client.Timeout, no transport ResponseHeaderTimeout (either would cut
// a synchronous generation short of the service's GenerateTimeout),
// connects and TLS handshakes still bounded, and maxDuration, the
// adapter's bound for a context without a deadline, the default. An
// adapter's internal test passes it the client its New made with no
// Config.HTTPClient.
func ContextBound(t *testing.T, c *http.Client, maxDuration time.Duration) {
	t.Helper()
	if c.Timeout != 0 {
		t.Errorf("the default client's Timeout is %v; want none (the context bounds the call)", c.Timeout)
	}
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("the default client's transport is %T; want *http.Transport", c.Transport)
	}
	if tr.ResponseHeaderTimeout != 0 {
		t.Errorf("the default client's ResponseHeaderTimeout is %v; want none (the context bounds the call)", tr.ResponseHeaderTimeout)
	}
	if tr.DialContext == nil || tr.TLSHandshakeTimeout != 10*time.Second {
		t.Errorf("the default client's connects are not bounded (TLSHandshakeTimeout %v)", tr.TLSHandshakeTimeout)
	}
	if maxDuration != provider.DefaultMaxDuration {
		t.Errorf("MaxDuration %v; want %v", maxDuration, provider.DefaultMaxDuration)
	}
}
