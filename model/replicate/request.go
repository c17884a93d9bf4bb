package replicate

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// MaxDataURIBytes is the largest reference sent inline as a data: URI,
// as Replicate advises; a larger one is sent as its https URL.
const MaxDataURIBytes = 256 << 10

// syncMargin is how long before the context's deadline a create call's
// "Prefer: wait" must end, so that there is time left to poll or cancel.
const syncMargin = 5 * time.Second

// minCancelAfter is the shortest Cancel-After the API takes.
const minCancelAfter = 5 * time.Second

// matchInput is the aspect_ratio of FLUX Kontext that follows the
// reference image.
const matchInput = "match_input_image"

// predictionRequest is the body of
// POST /models/{owner}/{name}/predictions (schemas_prediction_request).
type predictionRequest struct {
	Input map[string]any `json:"input"`
}

// input is the model's input for a request: prompt, aspect_ratio (the
// ratio asked; auto is 1:1 for text-to-image and match_input_image for
// image-to-image), output_format png (so that the answer can be
// cropped), the reference image, and the seed (Config.SeedInput).
func (m *Model) input(req imagegen.Request, refs []provider.Reference) map[string]any {
	in := map[string]any{"prompt": req.Prompt, "output_format": "png"}
	ratio := string(provider.TargetRatio(req, nil, nil))
	if len(refs) > 0 {
		if req.AspectRatio == "" || req.AspectRatio == imagegen.AspectAuto {
			ratio = matchInput
		}
		in[m.cfg.ReferenceInput] = fileInput(refs[0], req.ImageInput[0])
	}
	in["aspect_ratio"] = ratio
	if m.cfg.SeedInput != "" && req.Seed != nil {
		in[m.cfg.SeedInput] = *req.Seed
	}
	return in
}

// fileInput is how a reference is sent: a data: URI when small (or when
// its URL is not https), else the https URL it was fetched from, which
// the guarded fetcher has just checked.
func fileInput(ref provider.Reference, rawURL string) string {
	if len(ref.Data) > MaxDataURIBytes {
		if u, err := url.Parse(rawURL); err == nil && u.Scheme == "https" {
			return rawURL
		}
	}
	return "data:" + ref.ContentType + ";base64," + base64.StdEncoding.EncodeToString(ref.Data)
}

// create starts a prediction on the official model and returns it as
// the API answers: finished when it ended within the "Prefer: wait",
// else starting or processing.
func (m *Model) create(ctx context.Context, input map[string]any) (*prediction, error) {
	path := "/models/" + url.PathEscape(m.owner) + "/" + url.PathEscape(m.name) + "/predictions"
	post, err := provider.PostJSON(m.client.URL(path), predictionRequest{Input: input}, m.header())
	if err != nil {
		return nil, &imagegen.ModelError{Provider: Provider, Message: provider.MsgMisconfigured, Err: err}
	}
	// A caller that gives up while the call is under way has no id to
	// cancel the prediction by: the request outlives ctx by up to
	// cancelTimeout, so that its answer still comes, and await cancels
	// the prediction it names (abandon) rather than leave it running,
	// and billed, to its end. Do still follows ctx: no try is made, nor
	// waited for, once ctx has ended.
	rctx, release := outliving(ctx, cancelTimeout)
	defer release()
	resp, err := m.client.Do(ctx, onContext(rctx, withTimeLeft(post, m.cfg.SyncWait)))
	if err != nil {
		return nil, err
	}
	return decodePrediction(resp)
}

// outliving is a context that ends grace after ctx ends (its deadline
// or its cancel), and the function that ends it at once.
func outliving(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(out, func() { t.Stop() })
	})
	return out, func() { stop(); cancel() }
}

// onContext makes the requests of build on rctx, whatever context the
// attempt is made under.
func onContext(rctx context.Context, build provider.BuildFunc) provider.BuildFunc {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := build(ctx)
		if err != nil {
			return nil, err
		}
		return req.WithContext(rctx), nil
	}
}

// withTimeLeft adds to every request that post builds the headers that
// depend on the time left before ctx's deadline: "Prefer: wait" (at most
// max) and "Cancel-After". They are worked out anew for each try, so a
// retry never asks for more time than is left.
func withTimeLeft(post provider.BuildFunc, max time.Duration) provider.BuildFunc {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := post(ctx)
		if err != nil {
			return nil, err
		}
		if wait, ok := syncWait(ctx, max); ok {
			req.Header.Set("Prefer", fmt.Sprintf("wait=%d", wait))
		}
		if after, ok := cancelAfter(ctx); ok {
			req.Header.Set("Cancel-After", fmt.Sprintf("%ds", after))
		}
		return req, nil
	}
}

// syncWait is the N of "Prefer: wait=N": at most max, ending syncMargin
// before ctx's deadline, at least 1 s; false for none.
func syncWait(ctx context.Context, max time.Duration) (int, bool) {
	d := max
	if deadline, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(deadline)-syncMargin)
	}
	s := int(d / time.Second)
	return s, s >= 1
}

// cancelAfter is the Cancel-After of a prediction, in whole seconds:
// the time left until ctx's deadline (at least the API's 5 s), so that
// Replicate stops a prediction nobody waits for, even if our cancel
// call never comes. false when ctx has no deadline.
func cancelAfter(ctx context.Context) (int, bool) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	left := max(time.Until(deadline), minCancelAfter)
	return int(math.Ceil(left.Seconds())), true
}

// predictionURL is the API URL of a prediction (suffix "" to read it,
// "/cancel" to cancel it): the one the API answered (urls.get,
// urls.cancel) when it is under our base URL, else the same path built
// from the id, so that the token is never sent to another host.
func (m *Model) predictionURL(answered, id, suffix string) (string, error) {
	if strings.HasPrefix(answered, m.client.BaseURL+"/") {
		if u, err := url.Parse(answered); err == nil && u.RawQuery == "" && u.Fragment == "" {
			return answered, nil
		}
	}
	if id == "" || strings.ContainsAny(id, "/?#") {
		return "", provider.BadAnswer(Provider, true, fmt.Errorf("prediction id %q", id))
	}
	return m.client.URL("/predictions/" + url.PathEscape(id) + suffix), nil
}

// get reads a prediction.
func (m *Model) get(ctx context.Context, p *prediction) (*prediction, error) {
	u, err := m.predictionURL(p.URLs.Get, p.ID, "")
	if err != nil {
		return nil, err
	}
	resp, err := m.client.Do(ctx, provider.Get(u, m.header()))
	if err != nil {
		return nil, err
	}
	return decodePrediction(resp)
}

// cancelTimeout bounds the cancel call made after ctx ended.
const cancelTimeout = 10 * time.Second

// cancel asks Replicate to stop a prediction, once (no retries), on a
// context of its own: ctx has usually ended already.
func (m *Model) cancel(ctx context.Context, p *prediction) error {
	u, err := m.predictionURL(p.URLs.Cancel, p.ID, "/cancel")
	if err != nil {
		return err
	}
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	policy := m.client.Policy
	policy.MaxRetries = 0
	_, err = provider.Do(cctx, m.client.HTTP, provider.Post(u, "application/json", nil, m.header()), policy)
	return err
}
