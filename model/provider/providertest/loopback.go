package providertest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// LoopbackClient is an HTTP client for an adapter under test that
// reaches srv (a fake API) and loopback only: a request to any other
// host fails t and is not sent, so an adapter that follows a URL its
// fake answered (a spoofed polling URL, say) to elsewhere is caught. It
// follows no redirects, as provider.DefaultHTTPClient.
func LoopbackClient(t *testing.T, srv *httptest.Server) *http.Client {
	return loopbackOnly(srv, func(r *http.Request) error {
		t.Errorf("request to a non-loopback host: %s %s", r.Method, r.URL.Redacted())
		return fmt.Errorf("non-loopback host %s refused by the test", r.URL.Host)
	})
}

// loopbackOnly is a client of srv's transport that sends requests to
// loopback hosts only: any other request is answered refused(r) and not
// sent. It follows no redirects.
func loopbackOnly(srv *httptest.Server, refused func(*http.Request) error) *http.Client {
	inner := srv.Client().Transport
	return &http.Client{
		Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			host, _, _ := net.SplitHostPort(r.URL.Host)
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				return nil, refused(r)
			}
			return inner.RoundTrip(r)
		}),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (rt roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return rt(r) }
