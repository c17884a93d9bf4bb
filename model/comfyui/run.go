package comfyui

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// User-facing message of a prompt that failed while it ran.
const msgFailed = "the image model failed to generate the image, please retry later"

// run queues the prompt and follows it to its image: on the websocket
// when it can be opened (progress, and the end of the prompt at once),
// else, or when it breaks, by polling the history.
func (m *Model) run(ctx context.Context, g imagegen.Generation, prompt map[string]any) (imagegen.GeneratedImage, error) {
	clientID := newClientID()
	var conn *websocket.Conn
	if !m.cfg.NoWebsocket {
		var err error
		if conn, err = m.dial(ctx, clientID); err != nil {
			m.cfg.Logger.Warn("comfyui: no websocket, following the prompt by polling its history", "err", m.redacted(err))
			conn = nil
		}
	}
	id, err := m.queue(ctx, prompt, clientID)
	if err != nil {
		if conn != nil {
			_ = conn.CloseNow()
		}
		return imagegen.GeneratedImage{}, err
	}
	ended := false
	if conn != nil {
		ended, err = m.watchChecked(ctx, conn, id, g)
		_ = conn.CloseNow()
	}
	var h *historyEntry
	if err == nil {
		h, err = m.poll(ctx, id, ended)
	}
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, provider.ErrPastDeadline) {
			return imagegen.GeneratedImage{}, m.abandon(ctx, id, err)
		}
		if !ended && h == nil { // the prompt may still be queued or running
			return imagegen.GeneratedImage{}, m.dropped(ctx, id, err)
		}
		return imagegen.GeneratedImage{}, err
	}
	return m.image(ctx, id, h)
}

// redacted is the text of a websocket error, which comes from outside
// provider.Do, with the token redacted as Do redacts its own: the
// server's (or a proxy's) words in it, such as a 101's Upgrade header,
// may echo the Authorization it was sent.
func (m *Model) redacted(err error) string {
	return m.client.Policy.Redact(err.Error())
}

// newClientID is a client_id of this generation's own, so that the
// websocket carries only its messages.
func newClientID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "imagegen-" + hex.EncodeToString(b)
}

// dial opens /ws?clientId= (ws: or wss: as the base URL is http: or
// https:), with the Bearer token when one is set.
func (m *Model) dial(ctx context.Context, clientID string) (*websocket.Conn, error) {
	u := "ws" + strings.TrimPrefix(m.client.BaseURL, "http") + "/ws?clientId=" + url.QueryEscape(clientID)
	hc := *m.client.HTTP
	hc.Timeout = 0 // the websocket lives as long as the prompt; ctx bounds it
	// The handshake has a bound of its own: a /ws held unanswered must
	// not take the generation's whole deadline. The connection outlives
	// dctx (Dial's context bounds only the handshake).
	dctx, cancel := context.WithTimeout(ctx, m.cfg.DialTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: &hc, HTTPHeader: m.header()})
	if resp != nil && resp.Body != nil && err != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(64 << 20) // preview images come as binary messages
	return conn, nil
}

// watchChecked is watch, with the prompt's history read every
// HistoryCheck meanwhile: when the history has the prompt, the socket
// missed its end, and the watch stops as if it had seen it.
func (m *Model) watchChecked(ctx context.Context, conn *websocket.Conn, id string, g imagegen.Generation) (bool, error) {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var found atomic.Bool
	go func() {
		get := provider.Get(m.client.URL("/history/"+url.PathEscape(id)), m.header())
		t := time.NewTimer(m.cfg.HistoryCheck)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if resp, err := m.client.DoOnce(wctx, get); err == nil {
				var all map[string]json.RawMessage
				if json.Unmarshal(resp.Body, &all) == nil && all[id] != nil {
					m.cfg.Logger.Warn("comfyui: the websocket missed the end of the prompt; its history has it", "prompt_id", id)
					found.Store(true)
					stop() // ends the watch's read
					return
				}
			}
			t.Reset(m.cfg.HistoryCheck)
		}
	}()
	ended, err := m.watch(wctx, conn, id, g)
	if found.Load() && ctx.Err() == nil {
		return true, nil
	}
	return ended, err
}

// message is one JSON message of the websocket: {"type", "data"}.
type message struct {
	Type string `json:"type"`
	Data struct {
		PromptID         string   `json:"prompt_id"`
		Node             *string  `json:"node"`
		Value            *float64 `json:"value"`
		Max              *float64 `json:"max"`
		NodeType         string   `json:"node_type"`
		ExceptionType    string   `json:"exception_type"`
		ExceptionMessage string   `json:"exception_message"`
	} `json:"data"`
}

// watch reads the websocket until the prompt id has ended: "executing"
// with node null (ComfyUI has then written its history). It reports
// "progress" (value of max) to g. An "execution_error" or
// "execution_interrupted" of the prompt is its failure. ended is false,
// with no error, when the socket broke first: the caller polls instead.
func (m *Model) watch(ctx context.Context, conn *websocket.Conn, id string, g imagegen.Generation) (ended bool, err error) {
	for {
		kind, data, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			m.cfg.Logger.Warn("comfyui: the websocket broke, following the prompt by polling its history", "prompt_id", id, "err", m.redacted(err))
			return false, nil
		}
		if kind != websocket.MessageText {
			continue // a preview image
		}
		var msg message
		if json.Unmarshal(data, &msg) != nil {
			continue
		}
		mine := msg.Data.PromptID == id
		switch msg.Type {
		case "progress":
			if (mine || msg.Data.PromptID == "") && msg.Data.Value != nil && msg.Data.Max != nil && *msg.Data.Max > 0 {
				g.ReportProgress(*msg.Data.Value / *msg.Data.Max)
			}
		case "executing":
			if mine && msg.Data.Node == nil {
				return true, nil
			}
		case "execution_error", "execution_interrupted":
			if mine {
				return true, executionFailure(id, msg.Type, msg.Data.NodeType, msg.Data.ExceptionType, msg.Data.ExceptionMessage)
			}
		}
	}
}

// executionFailure is the error of a prompt that failed while it ran
// (out of memory, a node that raised) or was interrupted by someone
// else: retryable.
func executionFailure(id, kind, nodeType, excType, excMessage string) *imagegen.ModelError {
	cause := fmt.Sprintf("prompt %s: %s", id, kind)
	if nodeType != "" {
		cause += " in " + nodeType
	}
	if excType != "" || excMessage != "" {
		cause += ": " + strings.TrimSpace(excType+": "+excMessage)
	}
	return &imagegen.ModelError{Provider: Provider, Retryable: true, Message: msgFailed, Err: errors.New(cause)}
}

// historyEntry is a prompt's entry of GET /history/{prompt_id}.
type historyEntry struct {
	Outputs map[string]struct {
		Images []outputImage `json:"images"`
	} `json:"outputs"`
	Status *struct {
		StatusStr string              `json:"status_str"`
		Completed bool                `json:"completed"`
		Messages  [][]json.RawMessage `json:"messages"`
	} `json:"status"`
}

// outputImage is one image an output node saved.
type outputImage struct {
	Filename  string `json:"filename"`
	Subfolder string `json:"subfolder"`
	Type      string `json:"type"`
}

// poll reads the prompt's history until it has an entry, every
// PollInterval (reading at once first when the websocket said the
// prompt ended). An entry whose status is "error" is the prompt's
// failure.
func (m *Model) poll(ctx context.Context, id string, now bool) (*historyEntry, error) {
	get := provider.Get(m.client.URL("/history/"+url.PathEscape(id)), m.header())
	for {
		if !now {
			if err := provider.Wait(ctx, m.client.Policy.Clock, m.cfg.PollInterval); err != nil {
				return nil, err
			}
		}
		now = false
		resp, err := m.client.Do(ctx, get)
		if err != nil {
			return nil, err
		}
		var all map[string]historyEntry
		if err := provider.DecodeJSON(Provider, resp, &all); err != nil {
			return nil, err
		}
		h, ok := all[id]
		if !ok || h.Status != nil && !h.Status.Completed && h.Status.StatusStr != "error" {
			continue // queued or running
		}
		if h.Status != nil && h.Status.StatusStr == "error" {
			return &h, historyFailure(id, &h) // the entry with the error: the prompt has ended
		}
		return &h, nil
	}
}

// historyFailure reads the execution_error (or interruption) of a
// prompt's history messages.
func historyFailure(id string, h *historyEntry) *imagegen.ModelError {
	for _, msg := range h.Status.Messages {
		if len(msg) != 2 {
			continue
		}
		var kind string
		_ = json.Unmarshal(msg[0], &kind)
		if kind != "execution_error" && kind != "execution_interrupted" {
			continue
		}
		var d message
		_ = json.Unmarshal(msg[1], &d.Data)
		return executionFailure(id, kind, d.Data.NodeType, d.Data.ExceptionType, d.Data.ExceptionMessage)
	}
	return executionFailure(id, "error", "", "", "")
}

// image downloads the prompt's first saved image: of the output nodes
// in the order of their ids, the first image of type output (SaveImage)
// or, when there is none, of type temp (PreviewImage).
func (m *Model) image(ctx context.Context, id string, h *historyEntry) (imagegen.GeneratedImage, error) {
	nodes := make([]string, 0, len(h.Outputs))
	for n := range h.Outputs {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodeLess(nodes[i], nodes[j]) })
	var pick *outputImage
	for _, n := range nodes {
		for _, img := range h.Outputs[n].Images {
			if img.Filename != "" && (pick == nil || pick.Type != "output" && img.Type == "output") {
				pick = &img
			}
		}
	}
	if pick == nil {
		return imagegen.GeneratedImage{}, &imagegen.ModelError{Provider: Provider, Misconfigured: true, Message: provider.MsgMisconfigured,
			Err: fmt.Errorf("prompt %s saved no image: the workflow needs a SaveImage node", id)}
	}
	header := m.header()
	header.Set("Accept", "image/*")
	resp, err := m.client.Do(ctx, provider.Get(m.viewURL(*pick), header))
	if err != nil {
		return imagegen.GeneratedImage{}, err
	}
	return provider.AnsweredImage(Provider, "the image of /view", resp.Body)
}

// nodeLess orders node ids as numbers when they are, else as text.
func nodeLess(a, b string) bool {
	if len(a) != len(b) && strings.Trim(a+b, "0123456789") == "" {
		return len(a) < len(b)
	}
	return a < b
}
