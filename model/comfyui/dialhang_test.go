package comfyui_test

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// A websocket handshake that never answers (a proxy or server that
// holds /ws) is a websocket that cannot be opened: after
// Config.DialTimeout the prompt is queued and followed by polling its
// history, where the generation used to wait on the handshake until
// its deadline, with no prompt ever queued.
func TestHangingWebsocketHandshakeFallsBackToPolling(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.Queue(wsCall, answer{Hang: true})
	m, _ := newModel(t, f, comfyui.Config{Logger: quiet, DialTimeout: 50 * time.Millisecond})
	req := providertest.T2I("a fox", imagegen.Aspect1x1)
	plan, err := m.Plan(req)
	is.NoErr(err)
	ctx, cancel := context.WithTimeout(t.Context(), providertest.HangLimit/2) // the generation's deadline, before the fake lets the handshake go
	defer cancel()
	imgs, err := m.Generate(ctx, imagegen.Generation{TaskID: "task-1", Model: plan.Model, Request: req, Attempt: 1})
	is.NoErr(err)
	is.Equal(len(imgs), 1)
	w, h := providertest.Size(t, imgs[0].Data)
	is.Equal(provider.Size{W: w, H: h}, provider.Size{W: 1024, H: 1024})
	is.Equal(f.Kinds()[:2], []string{wsCall, promptCall}) // the prompt queued once the dial gave up
}
