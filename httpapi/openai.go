package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/suggest"
)

// The OpenAI-compatible endpoint (an optional extension): POST
// {OpenAIPrefix}/images/generations takes OpenAI's Images request and
// answers in OpenAI's response and error shapes, so the official OpenAI
// SDKs work against this server by changing their base URL. It is the
// same service behind another door: the same API keys, credits and rate
// limit. It submits a task and waits for it (Config.OpenAIWait for it
// to start, as long again for a running one to end), one of the owner's
// Config.MaxWaitsPerOwner long waits; see docs/api.md for what maps to
// what.

// OpenAIImagesRequest is the body of POST /images/generations, as
// OpenAI's CreateImageRequest defines it. Only prompt, n, size and
// response_format change what is made; the other OpenAI fields are
// accepted and ignored, except stream, which must be false.
type OpenAIImagesRequest struct {
	Prompt         string `json:"prompt"`
	N              *int   `json:"n,omitempty"`
	Size           string `json:"size,omitempty"`
	ResponseFormat string `json:"response_format,omitempty"`
	Stream         bool   `json:"stream,omitempty"`
}

// openAIAcceptedFields are the fields of OpenAI's CreateImageRequest; any
// other is refused, as OpenAI refuses it.
var openAIAcceptedFields = []string{
	"prompt", "model", "n", "quality", "response_format", "output_format", "output_compression",
	"stream", "partial_images", "size", "moderation", "background", "style", "user",
}

// OpenAIImagesResponse is OpenAI's ImagesResponse: one image, as a URL
// (signed, expiring with the task's retention) or as base64.
type OpenAIImagesResponse struct {
	Created int64             `json:"created"`
	Data    []OpenAIImageData `json:"data"`
}

// OpenAIImageData is one image of OpenAIImagesResponse.
type OpenAIImageData struct {
	URL     string `json:"url,omitempty"`
	B64JSON string `json:"b64_json,omitempty"`
}

// openAISizes maps OpenAI's documented sizes (DALL-E 2 and 3, GPT image)
// to aspect ratios; other WxH sizes are accepted when their ratio is
// exactly one of ours.
var openAISizes = map[string]imagegen.AspectRatio{
	"auto": imagegen.AspectAuto, "256x256": imagegen.Aspect1x1, "512x512": imagegen.Aspect1x1,
	"1024x1024": imagegen.Aspect1x1, "1536x1024": imagegen.Aspect3x2, "1024x1536": imagegen.Aspect2x3,
	"1792x1024": imagegen.Aspect16x9, "1024x1792": imagegen.Aspect9x16,
}

// OpenAIAspectRatio maps an OpenAI size ("1024x1024", "auto", "") to
// the aspect ratio asked for, or reports false for a size this server
// cannot make. The pixel size is the model's; only the shape is kept.
func OpenAIAspectRatio(size string) (imagegen.AspectRatio, bool) {
	if size == "" {
		return imagegen.AspectAuto, true
	}
	if a, ok := openAISizes[size]; ok {
		return a, true
	}
	ws, hs, _ := strings.Cut(size, "x")
	w, okW := sizeDimension(ws)
	h, okH := sizeDimension(hs)
	if !okW || !okH {
		return "", false
	}
	for _, a := range imagegen.AspectRatios() {
		if aw, ah := a.Size(); w*ah == h*aw {
			return a, true
		}
	}
	return "", false
}

// sizeDimension reads one side of a WIDTHxHEIGHT size: 1 to 8192 in
// plain decimal digits. strconv.Atoi alone would also take a sign
// ("+3x+2") or leading zeros ("0512x512"), spellings OpenAI refuses.
func sizeDimension(s string) (int, bool) {
	if len(s) == 0 || len(s) > 4 || s[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= 8192
}

// handleOpenAIGenerations serves POST {OpenAIPrefix}/images/generations.
func (h *Handler) handleOpenAIGenerations() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		req, format, oerr := decodeOpenAIRequest(w, r)
		if oerr != nil {
			oerr.write(w)
			return
		}
		// The wait below is one of the owner's long waits: beyond
		// Config.MaxWaitsPerOwner the request is refused before it
		// submits, so nothing is charged.
		if !h.waits.Take(p.Owner) {
			openAITooManyWaits(w, h.waits.Max())
			return
		}
		defer h.waits.Give(p.Owner) // on a panic or a hang-up too
		sub, err := h.cfg.Service.Submit(r.Context(), p.Owner, req)
		if err != nil {
			// The task it may have made, charged, must not run on for
			// nobody: OpenAI's SDKs retry the 500 with a fresh submit,
			// and a caller that hung up comes back for nothing.
			h.cfg.Service.CancelLostSubmit(r.Context(), p.Owner, err)
			h.openAIErr(w, r, err)
			return
		}
		// The answer may come up to twice OpenAIWait from now
		// (awaitOpenAI), past the WriteTimeout the server may set for
		// its other routes: the connection's write deadline must not
		// cut off the answer of a task that ended, charged. Real time:
		// a deadline is the connection's, not Config.Clock's.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(2*h.cfg.OpenAIWait + openAIAnswerTime))
		t, err := h.awaitOpenAI(r.Context(), p.Owner, sub.TaskID)
		if err != nil {
			h.openAIErr(w, r, err)
			return
		}
		if t.Status == imagegen.StatusFailed {
			openAITaskFailed(t).write(w)
			return
		}
		data := make([]OpenAIImageData, len(t.Images))
		for i, id := range t.Images {
			if format == "url" {
				data[i].URL = h.imageURL(r, id, t.ExpiresAt.Unix())
				continue
			}
			b64, err := h.imageBase64(r.Context(), id)
			if err != nil {
				if r.Context().Err() != nil { // the caller has gone; nobody reads the answer
					w.WriteHeader(statusClientClosed)
					return
				}
				h.cfg.Logger.ErrorContext(r.Context(), "read an image for a b64_json answer", "task_id", t.ID, "image_id", id, "err", err)
				openAIImageUnreadable(t.ID).write(w)
				return
			}
			data[i].B64JSON = b64
		}
		encode(w, http.StatusOK, OpenAIImagesResponse{Created: t.FinishedAt.Unix(), Data: data})
	})
}

// imageBase64 reads an image's bytes from the blob store as base64 (the
// b64_json answer holds whole images by its nature).
func (h *Handler) imageBase64(ctx context.Context, id string) (string, error) {
	_, blob, err := h.cfg.Service.OpenImage(ctx, id)
	if err != nil {
		return "", err
	}
	defer blob.Body.Close()
	var b strings.Builder
	enc := base64.NewEncoder(base64.StdEncoding, &b)
	if _, err := io.Copy(enc, blob.Body); err != nil {
		return "", fmt.Errorf("httpapi: read image %s: %w", id, err)
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// awaitOpenAI waits for the task to end. Config.OpenAIWait bounds the
// wait for it to start: a task still pending then is cancelled. One a
// worker is running then is waited for at most one more OpenAIWait, so
// that a caller cannot have its tasks start just before the deadline
// (a backlog about OpenAIWait deep) and run, calling the provider, only
// to be cancelled and refunded: a task that ends in the extension is
// answered and charged as any task is.
//
// A task cancelled when the server stops waiting (pending at the
// deadline, still running after the extension, running when the server
// drains at shutdown, or whose wait fails: a store error) is refunded
// in full (serverGaveUp): an OpenAI client has no task to come back to.
// The one still running after the extension is refunded too: it has run
// for a whole OpenAIWait at least, however late it started, so what
// holds it is the provider or the worker (ours to answer for), not the
// caller's timing, and keeping its charge would bill an honest caller
// for an image it never gets. The caller hanging up cancels the task as
// the owner's cancel does (hungUp).
func (h *Handler) awaitOpenAI(ctx context.Context, owner, id string) (*imagegen.Task, error) {
	deadline := h.cfg.Clock.Now().Add(h.cfg.OpenAIWait)
	extended := false
	waitCtx, stop := h.drained.Context(ctx)
	defer stop()
	for {
		t, err := h.cfg.Service.WaitTask(waitCtx, owner, id, deadline.Sub(h.cfg.Clock.Now()))
		switch {
		case ctx.Err() != nil:
			return h.giveUp(ctx, owner, id, ctx.Err(), h.hungUp())
		case h.drained.Drained():
			if t != nil && t.Status.Terminal() {
				return t, nil
			}
			return h.giveUp(ctx, owner, id, errOpenAIDraining, serverGaveUp())
		case err != nil:
			// A wait that fails ends it too: the 500 it answers is
			// retried by OpenAI's SDKs with a fresh submit, so the
			// task, charged, must not run on for nobody.
			return h.giveUp(ctx, owner, id, err, serverGaveUp())
		case t.Status.Terminal():
			return t, nil
		case h.cfg.Clock.Now().Before(deadline): // WaitTask waits at most imagegen.MaxWait
			continue
		case !extended && t.Status == imagegen.StatusProcessing:
			extended, deadline = true, deadline.Add(h.cfg.OpenAIWait)
		default:
			return h.giveUp(ctx, owner, id, errOpenAITimeout, serverGaveUp())
		}
	}
}

// openAIAnswerTime is how long an OpenAI answer may take to write once
// its task has ended (b64_json answers hold whole images), on top of
// the longest wait, for the connection's write deadline.
const openAIAnswerTime = 30 * time.Second

// errOpenAITimeout: the task did not start within Config.OpenAIWait, or
// did not end within one more.
var errOpenAITimeout = errors.New("httpapi: the generation did not finish in time")

// errOpenAIDraining: the server began to shut down while the task ran.
var errOpenAIDraining = errors.New("httpapi: the server is shutting down")

// serverGaveUp is how giveUp cancels when the server stops waiting (the
// task did not start in time or did not end in the extension, the
// server drains, the wait failed): its choice, not the caller's, so the
// task is refunded in full, a running one too (see awaitOpenAI).
func serverGaveUp() imagegen.CancelParams { return imagegen.CancelParams{} }

// hungUp is how giveUp cancels when the request's context has ended:
// the caller hung up, its choice, and a generation that had begun keeps
// its charge, as the owner's cancel does (POST /tasks/{id}/cancel); else
// hanging up would have a provider's call for nothing. A server that is
// draining (and may close its connections) gave up itself: refunded.
func (h *Handler) hungUp() imagegen.CancelParams {
	return imagegen.CancelParams{KeepStartedCharge: !h.drained.Drained()}
}

// giveUp cancels a task the OpenAI endpoint stops waiting for, for the
// reason why, as p says. A task that ended meanwhile is returned as it
// ended. A cancel that fails otherwise leaves the task queued or
// running, and charged: giveUp answers an *uncancelledError, which the
// answer says.
func (h *Handler) giveUp(ctx context.Context, owner, id string, why error, p imagegen.CancelParams) (*imagegen.Task, error) {
	bg := context.WithoutCancel(ctx)
	_, err := h.cfg.Service.CancelWith(bg, owner, id, p)
	if errors.Is(err, imagegen.ErrInvalidTransition) && ctx.Err() == nil {
		return h.cfg.Service.Task(bg, owner, id)
	}
	if err != nil && !errors.Is(err, imagegen.ErrInvalidTransition) {
		h.cfg.Logger.ErrorContext(bg, "cancel an OpenAI-compatible task that ran out of time", "task_id", id, "err", err)
		if ctx.Err() == nil {
			return nil, &uncancelledError{id: id, why: why, err: err}
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("task %s: %w", id, why)
}

// uncancelledError: the OpenAI endpoint gave up on task id, for the
// reason why, and could not cancel it (err): it may still run, and it is
// charged unless it fails.
type uncancelledError struct {
	id       string
	why, err error
}

func (e *uncancelledError) Error() string {
	return fmt.Sprintf("task %s: %v; cancelling it failed: %v", e.id, e.why, e.err)
}

func (e *uncancelledError) Unwrap() []error { return []error{e.why, e.err} }

// decodeOpenAIRequest reads and checks an OpenAI Images request and
// returns our request and the response format ("url" or "b64_json").
func decodeOpenAIRequest(w http.ResponseWriter, r *http.Request) (imagegen.Request, string, *openAIError) {
	if err := checkContentType(r); err != nil {
		return imagegen.Request{}, "", invalidOpenAI("", "Content-Type must be application/json", "invalid_value")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err = unreadable(err); err == errUnreadableBody {
		return imagegen.Request{}, "", invalidOpenAI("", "The "+errUnreadableBody.Message+".", "invalid_json")
	}
	if err != nil {
		// 413, as the native API answers it; OpenAI's SDKs do not retry it.
		return imagegen.Request{}, "", newOpenAIError(http.StatusRequestEntityTooLarge, "invalid_request_error", "", "request_too_large",
			"The request body must be at most 1 MiB.")
	}
	if !utf8.Valid(body) { // encoding/json would read each bad byte as U+FFFD: a prompt other than the one sent
		return imagegen.Request{}, "", invalidOpenAI("", "The request body must be JSON in UTF-8.", "invalid_json")
	}
	if !json.Valid(body) || !isJSONObject(body) {
		return imagegen.Request{}, "", invalidOpenAI("", "The request body must be a JSON object.", "invalid_json")
	}
	if name, ok := firstUnknownField(body); ok {
		msg := "Unrecognized request argument supplied: " + name
		if near := suggest.Nearest(name, openAIAcceptedFields); near != "" {
			msg += " (did you mean " + near + "?)"
		}
		return imagegen.Request{}, "", invalidOpenAI(name, msg, "unknown_parameter")
	}
	var in OpenAIImagesRequest
	if err := json.Unmarshal(body, &in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return imagegen.Request{}, "", invalidOpenAI(te.Field, fmt.Sprintf("Invalid type for '%s': expected %s.", te.Field, te.Type), "invalid_type")
		}
		return imagegen.Request{}, "", invalidOpenAI("", "The request body is not valid JSON.", "invalid_json")
	}
	switch {
	case in.Prompt == "":
		return imagegen.Request{}, "", invalidOpenAI("prompt", "Missing required parameter: 'prompt'.", "missing_required_parameter")
	case in.N != nil && *in.N != 1:
		return imagegen.Request{}, "", invalidOpenAI("n", fmt.Sprintf("Invalid value: %d. This server makes one image per request: 'n' must be 1.", *in.N), "invalid_value")
	case in.Stream:
		return imagegen.Request{}, "", invalidOpenAI("stream", "Streaming is not supported: 'stream' must be false.", "invalid_value")
	}
	format := in.ResponseFormat
	switch format {
	case "":
		format = "url"
	case "url", "b64_json":
	default:
		return imagegen.Request{}, "", invalidOpenAI("response_format", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'url' and 'b64_json'.", format), "invalid_value")
	}
	ratio, ok := OpenAIAspectRatio(in.Size)
	if !ok {
		return imagegen.Request{}, "", invalidOpenAI("size", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'auto', '256x256', '512x512', '1024x1024', '1536x1024', '1024x1536', '1792x1024', '1024x1792', or any WIDTHxHEIGHT in a ratio of 1:1, 3:2, 2:3, 16:9, 9:16, 4:3 or 3:4.", in.Size), "invalid_value")
	}
	req := imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: in.Prompt, AspectRatio: ratio}
	if err := req.Validate(); err != nil {
		var ve *imagegen.ValidationError
		if errors.As(err, &ve) {
			return imagegen.Request{}, "", invalidOpenAI(ve.Field, ve.Message, "invalid_value")
		}
		return imagegen.Request{}, "", invalidOpenAI("", err.Error(), "invalid_value")
	}
	return req, format, nil
}
