package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/wire"
)

// A body that cannot be read whole is the client's doing: it hung up
// before its Content-Length (io.ErrUnexpectedEOF), broke its chunked
// framing, or sent it slower than the server's ReadTimeout (a timeout
// error). The submit is refused with 422 on the API and 400 on the
// OpenAI-compatible endpoint, no server error is logged, nothing is
// charged and no Idempotency-Key is taken. It was a 500 internal_error,
// logged as an error, on the API, and "must be at most 1 MiB" on the
// OpenAI-compatible endpoint.
func TestUnreadableBodyIsTheClientsError(t *testing.T) {
	is := is.New(t)
	logs := &syncBuf{}
	e := newEnv(t, func(o *envOptions) {
		o.openAI = true
		o.logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	broken := map[string]error{
		"ended early": io.ErrUnexpectedEOF,
		"too slow":    os.ErrDeadlineExceeded,
	}
	send := func(path, start string, cause error, hdr ...string) *httptest.ResponseRecorder {
		body := io.MultiReader(strings.NewReader(start), iotest.ErrReader(cause))
		return doReading(e.h, "POST", path, e.key, body, append([]string{"Content-Type", "application/json"}, hdr...)...)
	}
	for name, cause := range broken {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			msg := wantError(t, send("/api/v1/generate", `{"scene":"text-to-image","pro`, cause, "Idempotency-Key", "broken-"+name), http.StatusUnprocessableEntity, wire.APIInvalidParams)
			is.True(strings.Contains(msg, "could not be read"))

			w := send("/v1/images/generations", `{"prompt":"a f`, cause)
			is.Equal(w.Code, http.StatusBadRequest)
			var body struct {
				Error struct {
					Message string `json:"message"`
					Code    string `json:"code"`
				} `json:"error"`
			}
			is.NoErr(json.Unmarshal(w.Body.Bytes(), &body))
			is.True(strings.Contains(body.Error.Message, "could not be read")) // not "must be at most 1 MiB"
			is.True(body.Error.Code != "request_too_large")
		})
	}
	is.Equal(e.credits(), int64(10))
	for _, line := range logs.lines(t) {
		is.True(line["level"] != "ERROR") // no server error logged
	}
	// The key was not taken: the whole body, sent again with it, is a task.
	w := e.do("POST", "/api/v1/generate", e.key, `{"scene":"text-to-image","prompt":"a fox"}`, "Idempotency-Key", "broken-ended early")
	is.Equal(w.Code, http.StatusCreated)
}
