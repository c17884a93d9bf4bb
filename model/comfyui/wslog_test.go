package comfyui_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// syncBuffer is a log sink safe for the adapter's goroutines.
type syncBuffer = testenv.SyncBuffer

// A websocket handshake the server (or a proxy before it) answers with
// what it was sent, the Authorization header among it, fails; the
// warning logged for the fall back to polling names the failure with
// the token redacted, as every error of a call through provider.Do
// has it. The dial is made outside Do, and its error went to the log
// as it was.
func TestWebsocketFailureLogsNoToken(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws" {
			f.Server.Config.Handler.ServeHTTP(w, r) // the fake, for every other call
			return
		}
		f.Record(wsCall, call{kind: wsCall, path: r.URL.Path, header: r.Header.Clone()})
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		// A 101 whose Upgrade header echoes the request's credentials.
		fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", r.Header.Get("Authorization"))
		_ = rw.Flush()
	}))
	t.Cleanup(srv.Close)
	var logs syncBuffer
	c := comfyui.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	providertest.Configure(&c.Config, srv.URL, key)
	c.HTTPClient = providertest.LoopbackClient(t, srv)
	m := providertest.MustNew(t, comfyui.New, c)

	req := providertest.T2I("a fox", imagegen.Aspect1x1)
	plan, err := m.Plan(req)
	is.NoErr(err)
	imgs, err := m.Generate(t.Context(), imagegen.Generation{TaskID: "task-1", Model: plan.Model, Request: req, Attempt: 1})
	is.NoErr(err) // followed by polling instead
	is.Equal(len(imgs), 1)
	is.True(strings.Contains(logs.String(), "no websocket"))    // the fall back was logged
	is.True(strings.Contains(logs.String(), provider.Redacted)) // with the failure, its token redacted
	is.True(!strings.Contains(logs.String(), key))              // and nowhere else
}
