package comfyui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// FuzzGenerate runs Generate against a loopback ComfyUI that answers
// POST /prompt with the first input, sends each line of the second as a
// text message on the websocket (then drops it), and answers the first
// read of the history with the third (later reads: the prompt failed);
// /view answers a PNG. Whatever they hold, Generate ends within its
// context with a well-formed picture (cropped to 1:1) or a
// *imagegen.ModelError, reports progress within [0, 1], and classify
// gives a ModelError of one kind for the first input as a failure's
// body. Seeds: the wire examples of testdata (websocket messages one a
// line).
func FuzzGenerate(f *testing.F) {
	var ws [][]byte
	for _, name := range providertest.SeedFiles(f, "ws.") {
		var line bytes.Buffer
		if err := json.Compact(&line, providertest.Spec(f, name)); err != nil {
			f.Fatal(err)
		}
		ws = append(ws, line.Bytes())
	}
	all := bytes.Join(ws, []byte("\n"))
	prompt := providertest.Spec(f, "prompt.response.json")
	for _, name := range providertest.SeedFiles(f, "history.") {
		f.Add(prompt, all, providertest.Spec(f, name))
		f.Add(prompt, []byte{}, providertest.Spec(f, name))
	}
	for _, w := range ws {
		f.Add(prompt, w, providertest.Spec(f, "history.success.json"))
	}
	for _, name := range providertest.SeedFiles(f, "prompt.error.") {
		f.Add(providertest.Spec(f, name), []byte{}, []byte{})
	}
	srv := providertest.NewFuzzServer(f)
	m, err := New(Config{
		Config:       provider.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Clock: providertest.NewInstantClock()},
		PollInterval: 1,
		HistoryCheck: time.Hour,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		f.Fatal(err)
	}
	view := providertest.PNG(4, 3)
	f.Fuzz(func(t *testing.T, prompt, ws, history []byte) {
		var queued promptResponse
		_ = json.Unmarshal(prompt, &queued)
		failed := fmt.Appendf(nil, `{%q:{"outputs":{},"status":{"status_str":"error","completed":false,"messages":[]}}}`, queued.PromptID)
		reads := 0
		srv.Serve(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/ws":
				sendLines(r.Context(), w, r, ws)
			case r.URL.Path == "/prompt":
				_, _ = w.Write(prompt)
			case r.URL.Path == "/view":
				_, _ = w.Write(view)
			case strings.HasPrefix(r.URL.Path, "/history/") && reads == 0:
				reads++
				_, _ = w.Write(history)
			case strings.HasPrefix(r.URL.Path, "/history/"):
				_, _ = w.Write(failed)
			default: // /queue, /interrupt
				_, _ = w.Write([]byte(`{"queue_running":[],"queue_pending":[]}`))
			}
		})
		imgs, err := providertest.GenerateWithin(t, m, imagegen.Generation{Request: providertest.T2I("a cat", "1:1")})
		providertest.CheckOutcome(t, Provider, imgs, err)
		providertest.CheckClassify(t, Provider, classify, prompt)
	})
}

// sendLines accepts the websocket, sends each line of msgs as a text
// message and drops the connection.
func sendLines(ctx context.Context, w http.ResponseWriter, r *http.Request, msgs []byte) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	for line := range bytes.SplitSeq(msgs, []byte("\n")) {
		if conn.Write(ctx, websocket.MessageText, line) != nil {
			return
		}
	}
}
