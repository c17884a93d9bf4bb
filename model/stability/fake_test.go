package stability_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

const (
	key      = "sk-TESTKEY-0123456789abcdefghijklmnopqrstuv"
	corePath = "/v2beta/stable-image/generate/core"
	ultra    = "/v2beta/stable-image/generate/ultra"
	sd3Path  = "/v2beta/stable-image/generate/sd3"
)

// answer is a scripted answer the fake serves before it succeeds.
type answer = providertest.Answer

// part is one file part the fake received.
type part = providertest.FormFile

// call is one request the fake received.
type call struct {
	path   string
	header http.Header
	fields map[string][]string
	files  []part
}

func (c call) field(name string) string {
	if v := c.fields[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// seed is the form field "seed" as a number, or nil when there is none.
func (c call) seed(t *testing.T) *int64 {
	sent := c.field("seed")
	if sent == "" {
		return nil
	}
	seed, err := strconv.ParseInt(sent, 10, 64)
	providertest.Must(t, err)
	return &seed
}

// answerSize is the size the fake answers for an aspect_ratio: the
// ~1 megapixel buckets of SD3 (several are only near their ratio), and
// whether the API takes that ratio.
func answerSize(ratio string) (provider.Size, bool) {
	s, ok := map[string]provider.Size{
		"1:1": {W: 1024, H: 1024}, "16:9": {W: 1344, H: 768}, "21:9": {W: 1536, H: 640},
		"2:3": {W: 832, H: 1216}, "3:2": {W: 1216, H: 832}, "4:5": {W: 896, H: 1088},
		"5:4": {W: 1088, H: 896}, "9:16": {W: 768, H: 1344}, "9:21": {W: 640, H: 1536},
	}[ratio]
	return s, ok
}

// fake is the Stability v2beta Stable Image API on 127.0.0.1, following
// Stability's API reference (testdata/README.md): it parses the
// multipart form and checks every field of the endpoint (names, enums,
// ranges, the init image), the auth and accept headers, serves scripted
// answers, then answers like testdata/generate.response.accept-json.json
// with a PNG of the size the API gives for the ratio asked, or of the
// init image's size.
type fake struct {
	providertest.FakeAPI[call]

	mu     sync.Mutex
	answer provider.Size // when set, the size of every successful answer
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{}
	f.Start(t, f.serve)
	return f
}

// answerWith makes every successful answer of size s.
func (f *fake) answerWith(s provider.Size) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = s
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := call{path: r.URL.Path, header: r.Header.Clone()}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	formErr := fmt.Errorf("content-type %q: the body must be multipart/form-data", r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		c.fields, c.files, formErr = providertest.ParseForm(raw, params["boundary"])
	}
	// Calls are of the kind of their service: "core", "ultra" or "sd3".
	next, scripted := f.Record(strings.TrimPrefix(c.path, "/v2beta/stable-image/generate/"), c)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "0123456789abcdef")
	auth := r.Header.Get("Authorization")
	switch {
	case r.Method != http.MethodPost || !slices.Contains([]string{corePath, ultra, sd3Path}, r.URL.Path):
		f.T.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"id":"9b1c6e0f3a","name":"not_found","errors":["path: not found"]}`)
		return
	case auth != "Bearer "+key && auth != key: // the docs' samples send the bare key too
		w.WriteHeader(http.StatusUnauthorized)
		// Echoes what it got, to check that the adapter scrubs the key.
		fmt.Fprintf(w, `{"id":"4f1a9c2e7b","name":"unauthorized","errors":["authorization: invalid or missing API key %s"]}`, strings.TrimPrefix(auth, "Bearer "))
		return
	case formErr != nil:
		f.T.Errorf("request is not a valid form: %v", formErr)
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(f.Examples.Get("error.400.bad_request.json"))
		return
	}
	if err := checkForm(r.URL.Path, r.Header, c.fields, c.files); err != nil {
		f.T.Errorf("request breaks the wire spec: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"id":"a1b2c3d4","name":"bad_request","errors":[%q]}`, err.Error())
		return
	}
	if scripted {
		next.Serve(w, r)
		return
	}
	_, _ = w.Write(f.success(c))
}

// success is the documented JSON answer with a PNG of the size the API
// gives: the ratio's, or the init image's.
func (f *fake) success(c call) []byte {
	s, _ := answerSize(c.field("aspect_ratio"))
	if c.field("aspect_ratio") == "" {
		s, _ = answerSize("1:1") // the API's default ratio
	}
	if len(c.files) > 0 {
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(c.files[0].Data)); err == nil {
			s = provider.Size{W: cfg.Width, H: cfg.Height}
		}
	}
	f.mu.Lock()
	if f.answer != (provider.Size{}) {
		s = f.answer
	}
	f.mu.Unlock()
	body := withImage(f.T, f.Examples.Get("generate.response.accept-json.json"), f.PNGs.Of(s))
	if sent := c.seed(f.T); sent != nil && *sent != 0 {
		// The seed used: the one sent, or (none, or 0, which the API
		// reads as "random") the example's.
		body = providertest.EditJSON(f.T, body, func(resp map[string]any) { resp["seed"] = *sent })
	}
	return body
}

// withImage is an answer body with its image set.
func withImage(t *testing.T, body, png []byte) []byte {
	return providertest.EditJSON(t, body, func(resp map[string]any) {
		resp["image"] = base64.StdEncoding.EncodeToString(png)
	})
}

// checkForm checks a request against the API reference's description
// of the endpoint.
func checkForm(path string, h http.Header, fields map[string][]string, files []part) error {
	if a := h.Get("Accept"); a != "application/json" {
		// The API takes image/* too; this adapter documents JSON, and
		// the fake serves only JSON.
		return fmt.Errorf("accept %q, want application/json", a)
	}
	allowed := map[string][]string{
		corePath: {"prompt", "negative_prompt", "aspect_ratio", "seed", "style_preset", "output_format"},
		ultra:    {"prompt", "negative_prompt", "aspect_ratio", "seed", "output_format", "strength"},
		sd3Path:  {"prompt", "model", "mode", "strength", "aspect_ratio", "negative_prompt", "cfg_scale", "seed", "style_preset", "output_format"},
	}[path]
	for name, v := range fields {
		if !slices.Contains(allowed, name) {
			return fmt.Errorf("field %q is not taken by %s", name, path)
		}
		if len(v) != 1 {
			return fmt.Errorf("field %q sent %d times", name, len(v))
		}
	}
	get := func(name string) (string, bool) {
		v, ok := fields[name]
		if !ok {
			return "", false
		}
		return v[0], true
	}
	prompt, _ := get("prompt")
	if n := utf8.RuneCountInString(prompt); n < 1 || n > 10000 {
		return fmt.Errorf("prompt: %d characters, want 1 to 10000", n)
	}
	if v, ok := get("aspect_ratio"); ok {
		if _, known := answerSize(v); !known {
			return fmt.Errorf("aspect_ratio %q", v)
		}
	}
	formats := []string{"png", "jpeg", "webp"}
	if path == sd3Path {
		formats = []string{"png", "jpeg"}
	}
	if v, ok := get("output_format"); ok && !slices.Contains(formats, v) {
		return fmt.Errorf("output_format %q", v)
	}
	if v, ok := get("style_preset"); ok && !slices.Contains(presets(), v) {
		return fmt.Errorf("style_preset %q", v)
	}
	for _, f := range files {
		if path == corePath || f.Name != "image" || len(files) > 1 {
			return fmt.Errorf("file part %q is not taken by %s", f.Name, path)
		}
		if err := checkImage(f); err != nil {
			return err
		}
	}
	strength, hasStrength := get("strength")
	if hasStrength != (len(files) == 1) {
		return fmt.Errorf("strength goes with an image, and is required with one")
	}
	if hasStrength {
		if s, err := strconv.ParseFloat(strength, 64); err != nil || s < 0 || s > 1 {
			return fmt.Errorf("strength %q, want 0 to 1", strength)
		}
	}
	if path != sd3Path {
		return nil
	}
	model, _ := get("model")
	if model != "" && !slices.Contains([]string{"sd3.5-large", "sd3.5-large-turbo", "sd3.5-medium", "sd3.5-flash", "sd3-large", "sd3-large-turbo", "sd3-medium"}, model) {
		return fmt.Errorf("model %q", model)
	}
	if _, ok := get("negative_prompt"); ok && strings.HasSuffix(model, "-turbo") {
		return fmt.Errorf("negative_prompt is not taken by %s", model)
	}
	mode, _ := get("mode")
	switch mode {
	case "", "text-to-image":
		if len(files) > 0 {
			return fmt.Errorf("an image with mode text-to-image")
		}
	case "image-to-image":
		if len(files) == 0 {
			return fmt.Errorf("mode image-to-image without an image")
		}
		if _, ok := get("aspect_ratio"); ok {
			return fmt.Errorf("aspect_ratio is for text-to-image only")
		}
	default:
		return fmt.Errorf("mode %q", mode)
	}
	return nil
}

// presets are the style_preset values the API takes.
func presets() []string {
	return []string{"3d-model", "analog-film", "anime", "cinematic", "comic-book", "digital-art", "enhance", "fantasy-art",
		"isometric", "line-art", "low-poly", "modeling-compound", "neon-punk", "origami", "photographic", "pixel-art", "tile-texture"}
}

// checkImage checks an init image: jpeg, png or webp, every side at
// least 64 px, 4,096 to 9,437,184 pixels.
func checkImage(p part) error {
	if !slices.Contains([]string{"image/png", "image/jpeg", "image/webp"}, p.ContentType) {
		return fmt.Errorf("image: content type %q", p.ContentType)
	}
	if http.DetectContentType(p.Data) != p.ContentType {
		return fmt.Errorf("image: bytes of %s sent as %s", http.DetectContentType(p.Data), p.ContentType)
	}
	if p.ContentType == "image/webp" {
		return nil
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(p.Data))
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	if px := cfg.Width * cfg.Height; cfg.Width < 64 || cfg.Height < 64 || px < 4096 || px > 9_437_184 {
		return fmt.Errorf("image: %dx%d is out of bounds", cfg.Width, cfg.Height)
	}
	return nil
}
