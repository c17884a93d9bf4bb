package replicate_test

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
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

const key = "r8_TESTTOKEN0123456789abcdefghijklmnopqrstu"

// answer is a scripted failure the fake serves before it answers
// normally.
type answer = providertest.Answer

// Operations of the API the adapter uses.
const (
	opCreate = "create"
	opGet    = "get"
	opCancel = "cancel"
)

// call is one request the fake received.
type call struct {
	op     string
	method string
	path   string
	id     string // the prediction read or cancelled
	header http.Header
	raw    []byte
	input  map[string]any // create
}

// modelSpec is what the fake knows of an official model: its inputs and
// aspect_ratio values as the model's API page on replicate.com lists
// them (not part of the wire spec), and the shape of its output.
type modelSpec struct {
	inputs        []string
	aspectRatios  []string
	outputFormats []string
	listOutput    bool
	imageInput    string
}

var models = map[string]modelSpec{
	"black-forest-labs/flux-kontext-pro": {
		inputs:        []string{"prompt", "input_image", "aspect_ratio", "output_format", "seed", "safety_tolerance", "prompt_upsampling"},
		aspectRatios:  []string{"match_input_image", "1:1", "16:9", "9:16", "4:3", "3:4", "3:2", "2:3", "4:5", "5:4", "21:9", "9:21", "2:1", "1:2"},
		outputFormats: []string{"jpg", "png"},
		imageInput:    "input_image",
	},
	"black-forest-labs/flux-schnell": {
		inputs:        []string{"prompt", "aspect_ratio", "num_outputs", "output_format", "output_quality", "seed", "go_fast", "megapixels", "num_inference_steps", "disable_safety_checker"},
		aspectRatios:  []string{"1:1", "16:9", "21:9", "3:2", "2:3", "4:5", "5:4", "3:4", "4:3", "9:16", "9:21"},
		outputFormats: []string{"webp", "jpg", "png"},
		listOutput:    true,
	},
}

// kontextSizes are the sizes FLUX Kontext answers in (about 1 MP).
var kontextSizes = []provider.Size{
	{W: 672, H: 1568}, {W: 688, H: 1504}, {W: 720, H: 1456}, {W: 752, H: 1392}, {W: 800, H: 1328}, {W: 832, H: 1248},
	{W: 880, H: 1184}, {W: 944, H: 1104}, {W: 1024, H: 1024}, {W: 1104, H: 944}, {W: 1184, H: 880}, {W: 1248, H: 832},
	{W: 1328, H: 800}, {W: 1392, H: 752}, {W: 1456, H: 720}, {W: 1504, H: 688}, {W: 1568, H: 672},
}

// kontextSize is the size nearest w:h.
func kontextSize(w, h int) provider.Size {
	best, dist := kontextSizes[0], math.Inf(1)
	for _, s := range kontextSizes {
		if d := math.Abs(math.Log(float64(s.W)/float64(s.H)) - math.Log(float64(w)/float64(h))); d < dist {
			best, dist = s, d
		}
	}
	return best
}

// pred is a prediction the fake runs.
type pred struct {
	id        string
	model     string
	input     map[string]any
	reads     int
	cancelled bool
	size      provider.Size
}

// fake is Replicate's API on 127.0.0.1, following Replicate's OpenAPI
// description (testdata/README.md): every request is checked against
// testdata/openapi.json and what Replicate documents beside it, the
// token and the model's inputs are checked, scripted failures are served, then predictions go through
// the statuses of script (the create answer first, then one per read;
// the last one stays) and are answered with the documented example
// bodies. Outputs are PNGs of the model's size for the ratio asked, on
// replicate.delivery URLs that the fake serves as the adapter's Fetcher
// (with refs for the reference images): no other network. Failures are
// queued by operation (Queue(opCreate, ...)).
type fake struct {
	providertest.FakeAPI[call]
	spec *specValidator

	// Settings, set before the first call.
	script      []string      // default starting, processing, succeeded
	errorText   string        // error of a failed prediction; default the example's
	outputs     int           // outputs of a list model; default 1
	outputHost  string        // default replicate.delivery
	foreignURLs bool          // answer urls on api.replicate.com, as the examples have them
	hangGet     bool          // reads hang until the client leaves
	hanging     chan struct{} // gets a value when a read starts to hang, or a create to be held
	holdCreate  chan struct{} // when set, creates are answered only once it is closed
	refs        *providertest.Fetcher

	mu      sync.Mutex
	preds   map[string]*pred
	files   map[string][]byte
	fetched []string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{preds: map[string]*pred{}, files: map[string][]byte{}, refs: &providertest.Fetcher{}, hanging: make(chan struct{}, 1)}
	f.Start(t, f.serve)
	f.spec = newSpecValidator(t, f.baseURL())
	return f
}

func (f *fake) baseURL() string { return f.Server.URL + "/v1" }

// callsOf are the calls of one operation.
func (f *fake) callsOf(op string) []call {
	var out []call
	for _, c := range f.Calls() {
		if c.op == op {
			out = append(out, c)
		}
	}
	return out
}

// Fetched are the URLs the adapter downloaded, in order.
func (f *fake) Fetched() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.fetched)
}

// Fetch serves outputs, then reference images from refs.
func (f *fake) Fetch(ctx context.Context, url string) ([]byte, string, error) {
	f.mu.Lock()
	f.fetched = append(f.fetched, url)
	data, ok := f.files[url]
	f.mu.Unlock()
	if ok {
		return data, "image/png", nil
	}
	return f.refs.Fetch(ctx, url)
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	if err := f.spec.check(r, raw); err != nil {
		f.T.Errorf("%s %s breaks the wire spec: %v", r.Method, r.URL.Path, err)
	}
	c := call{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), raw: raw}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/"), "/")
	switch {
	case r.Method == http.MethodPost && len(parts) == 4 && parts[0] == "models" && parts[3] == "predictions":
		c.op = opCreate
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "predictions":
		c.op, c.id = opGet, parts[1]
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "predictions" && parts[2] == "cancel":
		c.op, c.id = opCancel, parts[1]
	}
	var body struct {
		Input map[string]any `json:"input"`
	}
	if c.op == opCreate {
		if err := json.Unmarshal(raw, &body); err != nil {
			f.T.Errorf("create body: %v", err)
		}
		c.input = body.Input
	}
	next, scripted := f.Record(c.op, c)
	if c.op == opCreate && f.holdCreate != nil {
		f.hanging <- struct{}{}
		<-f.holdCreate
	}

	w.Header().Set("Content-Type", "application/json")
	switch {
	case c.op == "":
		f.T.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		f.write(w, http.StatusNotFound, f.Examples.Get("error.404.json"))
		return
	case r.Header.Get("Authorization") != "Bearer "+key:
		f.write(w, http.StatusUnauthorized, f.Examples.Get("error.401.json"))
		return
	case scripted:
		next.Serve(w, r)
		return
	}
	switch c.op {
	case opCreate:
		f.create(w, parts[1]+"/"+parts[2], body.Input)
	case opGet:
		if f.hangGet {
			select {
			case f.hanging <- struct{}{}:
			default:
			}
			if !providertest.Hang(r, nil) {
				f.T.Errorf("the client did not leave a hanging read")
			}
			return
		}
		f.read(w, c.id, false)
	case opCancel:
		if len(raw) != 0 {
			f.T.Errorf("cancel with a body: %q", raw)
		}
		f.read(w, c.id, true)
	}
}

func (f *fake) write(w http.ResponseWriter, status int, body []byte) {
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (f *fake) create(w http.ResponseWriter, model string, input map[string]any) {
	spec, ok := models[model]
	if !ok {
		f.write(w, http.StatusNotFound, f.Examples.Get("error.404.json"))
		return
	}
	if err := checkInput(spec, input); err != nil {
		f.T.Errorf("input breaks %s's schema: %v", model, err)
		f.write(w, http.StatusUnprocessableEntity, f.Examples.Get("error.422.validation.json"))
		return
	}
	f.mu.Lock()
	p := &pred{id: fmt.Sprintf("gm3qorzdhgbfurvjtvhg%06d", len(f.preds)), model: model, input: input, size: f.outputSize(spec, input)}
	f.preds[p.id] = p
	f.mu.Unlock()
	status, body := f.body(p)
	code := http.StatusCreated
	if status == "starting" || status == "processing" {
		code = http.StatusAccepted
	}
	f.write(w, code, body)
}

func (f *fake) read(w http.ResponseWriter, id string, cancel bool) {
	f.mu.Lock()
	p, ok := f.preds[id]
	if ok && cancel {
		p.cancelled = true
	} else if ok {
		p.reads++
	}
	f.mu.Unlock()
	if !ok {
		f.write(w, http.StatusNotFound, f.Examples.Get("error.404.json"))
		return
	}
	_, body := f.body(p)
	f.write(w, http.StatusOK, body)
}

// status is where p is in the script.
func (f *fake) status(p *pred) string {
	if p.cancelled {
		return "canceled"
	}
	script := f.script
	if len(script) == 0 {
		script = []string{"starting", "processing", "succeeded"}
	}
	return script[min(p.reads, len(script)-1)]
}

// body is the example body of p's status, with p's id, model, input,
// urls, and output or error.
func (f *fake) body(p *pred) (string, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	status := f.status(p)
	name := map[string]string{
		"starting": "prediction.starting.json", "processing": "prediction.starting.json",
		"succeeded": "prediction.succeeded.image.json", "failed": "prediction.failed.json",
		"canceled": "prediction.canceled.json", "aborted": "prediction.canceled.json",
	}[status]
	api := f.baseURL()
	if f.foreignURLs {
		api = "https://api.replicate.com/v1"
	}
	return status, providertest.EditJSON(f.T, f.Examples.Get(name), func(doc map[string]any) {
		doc["id"], doc["model"], doc["input"], doc["status"] = p.id, p.model, p.input, status
		doc["urls"] = map[string]any{
			"get":    api + "/predictions/" + p.id,
			"cancel": api + "/predictions/" + p.id + "/cancel",
			"web":    "https://replicate.com/p/" + p.id,
		}
		switch status {
		case "succeeded":
			doc["output"] = f.output(p)
		case "failed":
			if f.errorText != "" {
				doc["error"] = f.errorText
			}
		}
	})
}

// output makes p's output files: one URL, or a list for a list model.
func (f *fake) output(p *pred) any {
	host := f.outputHost
	if host == "" {
		host = "replicate.delivery"
	}
	n := 1
	if models[p.model].listOutput && f.outputs > 0 {
		n = f.outputs
	}
	urls := make([]any, n)
	for i := range urls {
		u := fmt.Sprintf("https://%s/xezq/%s/out-%d.png", host, p.id, i)
		if _, ok := f.files[u]; !ok {
			f.files[u] = providertest.PNG(p.size.W, p.size.H)
		}
		urls[i] = u
	}
	if models[p.model].listOutput {
		return urls
	}
	return urls[0]
}

// outputSize is the model's size for the ratio asked: FLUX Kontext's
// nearest size, following the reference for match_input_image (1024x1024
// when its size cannot be read); 1024 on the long side for the others.
func (f *fake) outputSize(spec modelSpec, input map[string]any) provider.Size {
	ratio, _ := input["aspect_ratio"].(string)
	w, h := 1, 1
	if ratio == "match_input_image" {
		ref, _ := input[spec.imageInput].(string)
		if cfg, ok := f.refConfig(ref); ok {
			w, h = cfg.Width, cfg.Height
		}
	} else {
		fmt.Sscanf(ratio, "%d:%d", &w, &h)
	}
	if spec.imageInput == "" {
		s := 1024.0 / float64(max(w, h))
		return provider.Size{W: int(float64(w) * s), H: int(float64(h) * s)}
	}
	return kontextSize(w, h)
}

// refConfig decodes a reference input: a data: URI or a URL of refs.
func (f *fake) refConfig(ref string) (image.Config, bool) {
	var data []byte
	if rest, ok := strings.CutPrefix(ref, "data:"); ok {
		_, b64, _ := strings.Cut(rest, ";base64,")
		data, _ = base64.StdEncoding.DecodeString(b64)
	} else if d, _, err := f.refs.Fetch(context.Background(), ref); err == nil {
		data = d
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	return cfg, err == nil
}

// checkInput checks an input against the model's schema.
func checkInput(spec modelSpec, in map[string]any) error {
	for k := range in {
		if !slices.Contains(spec.inputs, k) {
			return fmt.Errorf("unknown input %q", k)
		}
	}
	if p, _ := in["prompt"].(string); p == "" {
		return fmt.Errorf("prompt must be a non-empty string")
	}
	if r, ok := in["aspect_ratio"]; ok && !slices.Contains(spec.aspectRatios, fmt.Sprint(r)) {
		return fmt.Errorf("aspect_ratio %v", r)
	}
	if o, ok := in["output_format"]; ok && !slices.Contains(spec.outputFormats, fmt.Sprint(o)) {
		return fmt.Errorf("output_format %v", o)
	}
	if spec.imageInput != "" {
		if v, ok := in[spec.imageInput]; ok {
			s, _ := v.(string)
			rest, isData := strings.CutPrefix(s, "data:")
			switch {
			case isData:
				mt, b64, ok := strings.Cut(rest, ";base64,")
				if !ok || !slices.Contains([]string{"image/png", "image/jpeg", "image/webp", "image/gif"}, mt) {
					return fmt.Errorf("%s: a data: URI of %q", spec.imageInput, mt)
				}
				if _, err := base64.StdEncoding.DecodeString(b64); err != nil {
					return fmt.Errorf("%s: %w", spec.imageInput, err)
				}
			case !strings.HasPrefix(s, "https://"):
				return fmt.Errorf("%s must be an https URL or a data: URI", spec.imageInput)
			}
		}
	}
	return nil
}

// httptestRequest is a create call as the adapter makes it, for the
// spec check.
func httptestRequest(url, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, url, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+key)
	return r
}
