package fal_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

const (
	key       = "fal-TESTKEY-0123456789abcdef:fedcba9876543210"
	requestID = "80e732af-660e-45cd-bd63-580e4f2a94cc"
	cdnHost   = "https://v3.fal.media"
	falHost   = "https://queue.fal.run" // in the examples' URLs
)

// Kinds of call the fake tells apart.
const (
	submitCall = "submit"
	statusCall = "status"
	resultCall = "result"
	cancelCall = "cancel"
)

// answer is a scripted answer the fake serves to one call of a kind,
// before its usual behaviour.
type answer = providertest.Answer

// wireInput is flux/dev's input as fal documents it, decoded strictly:
// an unknown field fails the test.
type wireInput struct {
	Prompt              *string         `json:"prompt"`
	ImageSize           json.RawMessage `json:"image_size"`
	NumImages           *int            `json:"num_images"`
	NumInferenceSteps   *int            `json:"num_inference_steps"`
	GuidanceScale       *float64        `json:"guidance_scale"`
	Seed                *int64          `json:"seed"`
	EnableSafetyChecker *bool           `json:"enable_safety_checker"`
	OutputFormat        *string         `json:"output_format"`
	Acceleration        *string         `json:"acceleration"`
	SyncMode            *bool           `json:"sync_mode"`
}

// call is one request the fake received.
type call struct {
	kind   string
	method string
	path   string
	query  string
	header http.Header
	raw    []byte
}

// presets are flux/dev's image_size presets and the sizes fal answers.
func presets() map[string]provider.Size {
	return map[string]provider.Size{
		"square_hd": {W: 1024, H: 1024}, "square": {W: 512, H: 512},
		"portrait_4_3": {W: 768, H: 1024}, "portrait_16_9": {W: 576, H: 1024},
		"landscape_4_3": {W: 1024, H: 768}, "landscape_16_9": {W: 1024, H: 576},
	}
}

// fake is fal's queue API on 127.0.0.1, and fal's CDN as an
// ImageFetcher, following fal's client and docs (testdata/README.md): it
// checks every call's method, path, "Authorization: Key" header and
// body, serves scripted answers, then the documented ones: submit as
// testdata/submit.response.json, the statuses in order (IN_QUEUE 202,
// IN_PROGRESS 202, COMPLETED 200; the last repeats), the result as
// testdata/result.flux-dev.json with an image of the asked size on the
// CDN, and cancel as testdata/cancel.*.json. logs is the debug log of
// the adapters made for it (newModel).
type fake struct {
	providertest.FakeAPI[call]
	logs  syncLog
	model string // endpoint id submitted to
	app   string // owner/app in status, result and cancel paths

	// statuses are the example names the status polls answer in order,
	// the last repeating. Default in_queue, in_progress, completed.
	statuses []string
	// foreignURLs makes the submit answer the example's queue.fal.run
	// URLs as they are, instead of the fake's.
	foreignURLs bool
	// answerSize, when set, is the size of every answered image.
	answerSize *provider.Size

	mu        sync.Mutex
	completed bool
	cdn       providertest.Fetcher // fal's CDN: the images the results name
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{model: "fal-ai/flux/dev", app: "fal-ai/flux",
		statuses: []string{"in_queue", "in_progress", "completed"}}
	f.Start(t, f.serve)
	return f
}

func (f *fake) kind(r *http.Request) string {
	base := "/" + f.app + "/requests/" + requestID
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/"+f.model:
		return submitCall
	case r.Method == http.MethodGet && r.URL.Path == base+"/status":
		return statusCall
	case r.Method == http.MethodGet && r.URL.Path == base:
		return resultCall
	case r.Method == http.MethodPut && r.URL.Path == base+"/cancel":
		return cancelCall
	}
	return ""
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := call{kind: f.kind(r), method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), raw: raw}
	next, scripted := f.Record(c.kind, c) // the tests queue every answer for a kind of their own

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-fal-request-id", requestID)
	switch {
	case c.kind == "":
		f.T.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"detail":"Not Found"}`))
		return
	case r.Header.Get("Authorization") != "Key "+key:
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write(f.Examples.Get("error.401.json"))
		return
	}
	if err := f.check(c); err != nil {
		f.T.Errorf("%s call breaks fal's documented API: %v", c.kind, err)
	}
	if scripted {
		next.Body = f.rewrite(next.Body)
		next.Serve(w, r)
		return
	}
	switch c.kind {
	case submitCall:
		_, _ = w.Write(f.rewrite(f.Examples.Get("submit.response.json")))
	case statusCall:
		f.serveStatus(w)
	case resultCall:
		_, _ = w.Write(f.result(c))
	case cancelCall:
		f.mu.Lock()
		done := f.completed
		f.mu.Unlock()
		if done {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(f.Examples.Get("cancel.already-completed.json"))
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(f.Examples.Get("cancel.response.json"))
	}
}

// serveStatus answers the next status of the progression: 202 while
// IN_QUEUE or IN_PROGRESS, 200 once COMPLETED.
func (f *fake) serveStatus(w http.ResponseWriter) {
	f.mu.Lock()
	name := f.statuses[0]
	if len(f.statuses) > 1 {
		f.statuses = f.statuses[1:]
	}
	body := f.Examples.Get("status." + name + ".json")
	var s struct{ Status string }
	if err := json.Unmarshal(body, &s); err != nil {
		f.T.Errorf("status example %s: %v", name, err)
	}
	if s.Status == "COMPLETED" {
		f.completed = true
	}
	f.mu.Unlock()
	if s.Status != "COMPLETED" {
		w.WriteHeader(http.StatusAccepted)
	}
	_, _ = w.Write(f.rewrite(body))
}

// rewrite points the example's queue URLs at the fake (unless
// foreignURLs) and at its app.
func (f *fake) rewrite(body []byte) []byte {
	s := string(body)
	s = strings.ReplaceAll(s, falHost+"/fal-ai/flux/", falHost+"/"+f.app+"/")
	if !f.foreignURLs {
		s = strings.ReplaceAll(s, falHost, f.Server.URL)
	}
	return []byte(s)
}

// result is testdata/result.flux-dev.json with the image of the size
// asked for (or answerSize), put on the CDN.
func (f *fake) result(c call) []byte {
	var in wireInput
	var size provider.Size
	for _, sc := range f.Calls() {
		if sc.kind == submitCall {
			_ = json.Unmarshal(sc.raw, &in)
		}
	}
	var preset string
	if json.Unmarshal(in.ImageSize, &preset) == nil {
		size = presets()[preset]
	} else {
		var wh struct{ Width, Height int }
		if err := json.Unmarshal(in.ImageSize, &wh); err != nil {
			f.T.Errorf("image_size %s: %v", in.ImageSize, err)
		}
		size = provider.Size{W: wh.Width, H: wh.Height}
	}
	if f.answerSize != nil {
		size = *f.answerSize
	}
	format := "jpeg"
	if in.OutputFormat != nil {
		format = *in.OutputFormat
	}
	url := fmt.Sprintf("%s/files/rabbit/%dx%d.%s", cdnHost, size.W, size.H, format)
	data := providertest.JPEG(size.W, size.H)
	if format == "png" {
		data = providertest.PNG(size.W, size.H)
	}
	f.cdn.Add(url, providertest.Image{Data: data, ContentType: http.DetectContentType(data)})

	return providertest.EditJSON(f.T, f.Examples.Get("result.flux-dev.json"), func(doc map[string]any) {
		img := doc["images"].([]any)[0].(map[string]any)
		img["url"], img["width"], img["height"], img["content_type"] = url, size.W, size.H, "image/"+format
	})
}

// check validates a call against fal's documented API.
func (f *fake) check(c call) error {
	switch c.kind {
	case submitCall:
		if ct := c.header.Get("Content-Type"); ct != "application/json" {
			return fmt.Errorf("Content-Type %q", ct)
		}
		return checkInput(c.raw)
	case statusCall:
		if q := c.query; q != "" && q != "logs=0" && q != "logs=1" {
			return fmt.Errorf("status query %q", q)
		}
	}
	if len(c.raw) != 0 {
		return fmt.Errorf("%s call with a body", c.kind)
	}
	return nil
}

// checkInput checks a submit body: flux/dev's fields only, with the
// values fal documents.
func checkInput(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var in wireInput
	if err := dec.Decode(&in); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if in.Prompt == nil || *in.Prompt == "" {
		return fmt.Errorf("prompt is required")
	}
	var preset string
	if json.Unmarshal(in.ImageSize, &preset) == nil {
		if _, ok := presets()[preset]; !ok {
			return fmt.Errorf("image_size %q", preset)
		}
	} else if in.ImageSize != nil {
		dec := json.NewDecoder(bytes.NewReader(in.ImageSize))
		dec.DisallowUnknownFields()
		var wh struct {
			Width  *int `json:"width"`
			Height *int `json:"height"`
		}
		if err := dec.Decode(&wh); err != nil || wh.Width == nil || wh.Height == nil || *wh.Width <= 0 || *wh.Height <= 0 {
			return fmt.Errorf("image_size %s is neither a preset nor {width, height}", in.ImageSize)
		}
	}
	if n := in.NumImages; n != nil && (*n < 1 || *n > 4) {
		return fmt.Errorf("num_images %d", *n)
	}
	if o := in.OutputFormat; o != nil && !slices.Contains([]string{"jpeg", "png"}, *o) {
		return fmt.Errorf("output_format %q", *o)
	}
	if a := in.Acceleration; a != nil && !slices.Contains([]string{"none", "regular", "high"}, *a) {
		return fmt.Errorf("acceleration %q", *a)
	}
	return nil
}

// completedWith is testdata/status.completed.json of a request that
// failed with errType.
func completedWith(t testing.TB, errType, msg string) []byte {
	return providertest.EditJSON(t, providertest.Spec(t, "status.completed.json"), func(doc map[string]any) {
		doc["error"], doc["error_type"] = msg, errType
	})
}

// syncLog is a goroutine-safe buffer for a slog handler.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
