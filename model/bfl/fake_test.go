package bfl_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/imagegen/imagegen/model/bfl"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

const key = "bfl_TESTKEY_0123456789abcdefghijklmnopqrstuv"

// Kinds of call the fake receives.
const (
	submitCall = "submit"
	pollCall   = "poll"
)

type answer = providertest.Answer

// call is one request the fake received.
type call struct {
	kind   string
	method string
	path   string
	query  string
	header http.Header
	raw    []byte
}

// fake is the BFL API on 127.0.0.1, following its documented schemas
// (testdata/README.md): it checks the key and every submit against the
// model's inputs, answers the submit with the example AsyncResponse
// (its polling_url on the fake unless pollingURL says otherwise), then
// each read of the result with the next status of statuses (the last
// one stays), from the examples. A Ready result's sample is a signed
// URL on delivery-us1.bfl.ai, which the fake serves as the adapter's
// Fetcher (with refs for the reference images): no other network.
type fake struct {
	providertest.FakeAPI[call]
	refs *providertest.Fetcher

	mu         sync.Mutex
	statuses   []string // default Pending, Ready
	progress   []any    // the progress of each Pending read; default the example's
	pollingURL string   // "" for the fake's own
	reads      int
	size       provider.Size // of the task's image, set at submit
	seed       any           // the seed sent at submit, which a Ready result reports; nil: the example's
	answerSeed any           // when not nil, what a Ready result reports as its seed instead ("null": none)
	fetched    []string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{refs: &providertest.Fetcher{}, statuses: []string{"Pending", "Ready"}}
	f.Start(t, f.serve)
	return f
}

// newModel points c at f: f's client (loopback only) and f as the
// Fetcher unless c names one.
func newModel(t *testing.T, f *fake, c bfl.Config) (*bfl.Model, *providertest.InstantClock) {
	clock := providertest.Configure(&c.Config, f.Server.URL, key)
	if c.HTTPClient == nil {
		c.HTTPClient = providertest.LoopbackClient(f.T, f.Server)
	}
	if c.Fetcher == nil {
		c.Fetcher = f
	}
	return providertest.MustNew(t, bfl.New, c), clock
}

const taskID = "8b1e3c5e-4a5f-4f2a-9d0e-2f6c8e7a1b23"

// sampleURL is where the fake's results are, as the API signs them.
const sampleURL = "https://delivery-us1.bfl.ai/results/8b/1e3c5e4a5f4f2a/" + taskID + "/sample.png?se=2026-11-26T10%3A10%3A00Z&sp=r&sig=EXAMPLE"

// Fetch serves the sample, then the reference images of refs.
func (f *fake) Fetch(ctx context.Context, url string) ([]byte, string, error) {
	f.mu.Lock()
	f.fetched = append(f.fetched, url)
	size := f.size
	f.mu.Unlock()
	if url == sampleURL {
		return f.PNGs.Of(size), "image/png", nil
	}
	return f.refs.Fetch(ctx, url)
}

// Fetched are the URLs the adapter downloaded, in order.
func (f *fake) Fetched() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.fetched)
}

// submits are the bodies of the submits received.
func (f *fake) submits(t *testing.T) []map[string]any {
	var out []map[string]any
	for _, c := range f.Calls() {
		if c.kind == submitCall {
			out = append(out, providertest.JSON(t, c.raw).(map[string]any))
		}
	}
	return out
}

// lastSubmit is the latest submit's body.
func (f *fake) lastSubmit(t *testing.T) map[string]any {
	s := f.submits(t)
	if len(s) == 0 {
		t.Fatal("no submit received")
	}
	return s[len(s)-1]
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := call{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), raw: raw}
	model, isSubmit := strings.CutPrefix(r.URL.Path, "/v1/")
	switch {
	case r.Method == http.MethodPost && isSubmit && !strings.Contains(model, "/"):
		c.kind = submitCall
	case r.Method == http.MethodGet && r.URL.Path == "/v1/get_result":
		c.kind = pollCall
	}
	next, scripted := f.Record(c.kind, c)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case c.kind == "":
		f.T.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"detail":"Not Found"}`))
		return
	case r.Header.Get("x-key") != key:
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write(f.Examples.Get("error.403.json"))
		return
	case scripted:
		next.Serve(w, r)
		return
	}
	switch c.kind {
	case submitCall:
		f.submit(w, model, raw)
	case pollCall:
		if id := r.URL.Query().Get("id"); id != taskID {
			f.T.Errorf("poll of task %q; want %q", id, taskID)
		}
		f.poll(w)
	}
}

func (f *fake) submit(w http.ResponseWriter, model string, raw []byte) {
	var in map[string]any
	if err := json.Unmarshal(raw, &in); err != nil {
		f.T.Errorf("submit body: %v", err)
	}
	size, err := f.check(model, in)
	if err != nil {
		f.T.Errorf("the submit breaks %s's schema: %v", model, err)
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write(f.Examples.Get("error.422.validation.json"))
		return
	}
	f.mu.Lock()
	f.size, f.reads, f.seed = size, 0, in["seed"]
	polling := f.pollingURL
	f.mu.Unlock()
	if polling == "" {
		polling = f.Server.URL + "/v1/get_result?id=" + taskID
	}
	_, _ = w.Write(providertest.EditJSON(f.T, f.Examples.Get("submit.response.json"), func(doc map[string]any) {
		doc["polling_url"] = polling
	}))
}

func (f *fake) poll(w http.ResponseWriter) {
	f.mu.Lock()
	status := f.statuses[min(f.reads, len(f.statuses)-1)]
	var progress any
	if f.reads < len(f.progress) {
		progress = f.progress[f.reads]
	}
	f.reads++
	seed := f.seed
	if f.answerSeed != nil {
		seed = f.answerSeed
	}
	f.mu.Unlock()
	name := "result." + strings.ReplaceAll(strings.ToLower(status), " ", "-") + ".json"
	_, _ = w.Write(providertest.EditJSON(f.T, f.Examples.Get(name), func(doc map[string]any) {
		if status == "Ready" {
			doc["result"].(map[string]any)["sample"] = sampleURL
			switch seed {
			case nil:
			case "null":
				doc["result"].(map[string]any)["seed"] = nil
			default:
				doc["result"].(map[string]any)["seed"] = seed
			}
		}
		if progress != nil {
			doc["progress"] = progress
		}
	}))
}

// inputs are each model's documented inputs.
func inputs(model string) []string {
	common := []string{"prompt", "seed", "output_format", "prompt_upsampling", "safety_tolerance", "webhook_url", "webhook_secret"}
	switch model {
	case bfl.ModelFluxPro11, bfl.ModelFluxDev:
		return append(common, "width", "height", "image_prompt")
	case bfl.ModelFluxPro11Ultra:
		return append(common, "aspect_ratio", "raw", "image_prompt", "image_prompt_strength")
	case bfl.ModelFluxKontextPro:
		return append(common, "aspect_ratio", "input_image", "input_image_2", "input_image_3", "input_image_4")
	}
	return nil
}

// check checks a submit against the model's schema and returns the
// size of the image the model makes of it.
func (f *fake) check(model string, in map[string]any) (provider.Size, error) {
	known := inputs(model)
	if known == nil {
		return provider.Size{}, fmt.Errorf("unknown model %q", model)
	}
	for k := range in {
		if !slices.Contains(known, k) {
			return provider.Size{}, fmt.Errorf("unknown input %q", k)
		}
	}
	if p, _ := in["prompt"].(string); p == "" {
		return provider.Size{}, fmt.Errorf("prompt must be a non-empty string")
	}
	if o, ok := in["output_format"]; ok && o != "png" && o != "jpeg" {
		return provider.Size{}, fmt.Errorf("output_format %v", o)
	}
	if s, ok := in["seed"]; ok {
		if n, isNum := s.(float64); !isNum || n != math.Trunc(n) {
			return provider.Size{}, fmt.Errorf("seed %v is not an integer", s)
		}
	}
	if slices.Contains(known, "width") {
		w, _ := in["width"].(float64)
		h, _ := in["height"].(float64)
		for _, side := range []float64{w, h} {
			if side < 256 || side > 1440 || math.Mod(side, 32) != 0 {
				return provider.Size{}, fmt.Errorf("width and height must be multiples of 32 from 256 to 1440 (got %vx%v)", w, h)
			}
		}
		return provider.Size{W: int(w), H: int(h)}, nil
	}
	rw, rh := 1, 1
	if ar, ok := in["aspect_ratio"].(string); ok {
		if _, err := fmt.Sscanf(ar, "%d:%d", &rw, &rh); err != nil || rw <= 0 || rh <= 0 || float64(rw)/float64(rh) > 21.0/9 || float64(rh)/float64(rw) > 21.0/9 {
			return provider.Size{}, fmt.Errorf("aspect_ratio %q must be W:H between 21:9 and 9:21", ar)
		}
	} else if ref, ok := in["input_image"].(string); ok {
		data, err := base64.StdEncoding.DecodeString(ref)
		if err != nil {
			return provider.Size{}, fmt.Errorf("input_image is not base64: %w", err)
		}
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return provider.Size{}, fmt.Errorf("input_image is not an image: %w", err)
		}
		rw, rh = cfg.Width, cfg.Height // Kontext follows the reference
	}
	s := nearMegapixel(rw, rh)
	if model == bfl.ModelFluxPro11Ultra {
		s = provider.Size{W: s.W * 2, H: s.H * 2} // about 4 megapixels
	}
	return s, nil
}

// nearMegapixel is about a megapixel near w:h, sides multiples of 16,
// as FLUX answers for an aspect_ratio (the sizes are seldom exact).
func nearMegapixel(w, h int) provider.Size {
	r := float64(w) / float64(h)
	width := math.Round(math.Sqrt(1024*1024*r)/16) * 16
	height := math.Round(math.Sqrt(1024*1024/r)/16) * 16
	return provider.Size{W: int(width), H: int(height)}
}
