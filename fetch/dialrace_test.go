package fetch_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/fetch"
)

// A host whose IPv6 address cannot be reached (the connection neither
// succeeds nor fails: a route that drops) is still fetched over its IPv4
// address, which is tried beside it after a short delay (Happy
// Eyeballs), both checked by the guard; the IPv6 attempt is cancelled
// once the IPv4 one has won. Dialled one after the other, the fetch
// waited on the IPv6 address until its timeout.
func TestUnreachableIPv6FallsBackToIPv4(t *testing.T) {
	is := is.New(t)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pngOf(1, 1)) })
	d := dialTo(s)
	released := make(chan struct{})
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasPrefix(addr, "[") { // IPv6: dropped until the dial is cancelled
			defer close(released)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return d.Dial(ctx, network, addr)
	}
	f, err := fetch.New(fetch.Config{
		Timeout:  2 * time.Second, // the fetch fails by then without the fallback
		Resolver: resolver(t, map[string][]string{"dual.example": {"2606:4700::1111", "93.184.216.34"}}),
		Dial:     dial,
	})
	is.NoErr(err)
	data, _, err := f.Fetch(t.Context(), "http://dual.example/a.png")
	is.NoErr(err)
	is.Equal(data, pngOf(1, 1))
	is.Equal(d.Asked(), []string{"93.184.216.34:80"})
	<-released // the IPv6 attempt ended with the race, not left behind
}
