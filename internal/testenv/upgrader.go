package testenv

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// SilentUpgrader starts a loopback server that answers every request
// with 101 Switching Protocols and then sends nothing, keeping the
// connection open until the test ends, and returns its URL. net/http
// hands such an answer's connection over as its body and stops watching
// the request's context, so a read of that body that is not bounded
// otherwise waits for as long as the host likes.
func SilentUpgrader(t testing.TB) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		_ = buf.Flush()
		<-release
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first
	return srv.URL
}
