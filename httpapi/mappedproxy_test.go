package httpapi_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/ratelimit"
)

// A trusted proxy given as an IPv4-mapped prefix (as some logs and
// dual-stack listeners show IPv4 peers) is trusted for its IPv4 peers,
// which arrive unmapped: otherwise every client behind it would be the
// proxy, one budget of failures shared by all of them.
func TestAuthFailuresBehindMappedTrustedProxy(t *testing.T) {
	e := newEnv(t)
	failures, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: 2, Window: time.Minute, Clock: e.clock})
	is.New(t).NoErr(err)
	h := e.handlerWith(httpapi.Config{
		AuthFailures:   failures,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")},
	})
	// Each forwarded client counts alone, through the proxy and through
	// a second trusted hop of the same prefix.
	for _, client := range []string{"192.0.2.1", "192.0.2.2"} {
		oneClient(t, h, "10.1.2.3:5555", func(int) []string { return []string{"X-Forwarded-For", client + ", 10.9.9.9"} })
	}
}
