package a1111_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagegen/imagegen/model/a1111"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// key is the server's --api-auth credentials.
const key = "imagegen:s3cret-password-0123456789"

// Kinds of call the fake receives.
const (
	txt2imgCall      = "txt2img"
	img2imgCall      = "img2img"
	progressCall     = "progress"
	taskProgressCall = "task-progress"
	interruptCall    = "interrupt"
)

type answer = providertest.Answer

// call is one request the fake received.
type call struct {
	kind   string
	path   string
	query  string
	header http.Header
	raw    []byte
	body   map[string]any
}

// fake is an sdapi server on 127.0.0.1, following the web UI's models
// (testdata/README.md): it checks Basic auth, that every txt2img and
// img2img body holds only the documented fields with sizes of multiples
// of 8, and answers with a PNG of the size asked and the example's info
// carrying the seed sent (a random one for -1). Its running job is the
// one being answered, while the answer is held (release):
// /sdapi/v1/progress serves that job's progress, the values of progress
// in turn, whoever asks (it is the running job's, which may be another
// client's, as otherJob plays); /internal/progress says active for the
// job's force_task_id, with the progress last served.
type fake struct {
	providertest.FakeAPI[call]

	mu         sync.Mutex
	running    string        // the force_task_id of the job being answered
	release    chan struct{} // when not nil, a generation's answer waits for it to close
	progress   []float64     // the running job's progress, in turn, one value a read of /sdapi/v1/progress
	current    any           // the progress last served (nil before the first)
	otherJob   bool          // another client's job runs: /internal/progress says not ours
	answerSeed *int64        // the seed info reports, when not the one sent
	answerSize *provider.Size
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{}
	f.Start(t, f.serve)
	return f
}

// newModel points c at f, with f's credentials unless c names its own.
func newModel(t *testing.T, f *fake, c a1111.Config) (*a1111.Model, *providertest.InstantClock) {
	clock := providertest.Configure(&c.Config, f.Server.URL, key)
	if c.HTTPClient == nil {
		c.HTTPClient = providertest.LoopbackClient(t, f.Server)
	}
	return providertest.MustNew(t, a1111.New, c), clock
}

// documented are the fields of the request examples.
func (f *fake) documented(name string) []string {
	var doc map[string]any
	providertest.Must(f.T, json.Unmarshal(f.Examples.Get(name), &doc))
	var keys []string
	for k := range doc {
		keys = append(keys, k)
	}
	return keys
}

// generations are the bodies of the txt2img and img2img calls.
func (f *fake) generations() []map[string]any {
	var out []map[string]any
	for _, c := range f.Calls() {
		if c.kind == txt2imgCall || c.kind == img2imgCall {
			out = append(out, c.body)
		}
	}
	return out
}

// last is the latest generation's body.
func (f *fake) last(t *testing.T) map[string]any {
	g := f.generations()
	if len(g) == 0 {
		t.Fatal("no generation received")
	}
	return g[len(g)-1]
}

func kindOf(r *http.Request) string {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/sdapi/v1/txt2img":
		return txt2imgCall
	case r.Method == http.MethodPost && r.URL.Path == "/sdapi/v1/img2img":
		return img2imgCall
	case r.Method == http.MethodGet && r.URL.Path == "/sdapi/v1/progress":
		return progressCall
	case r.Method == http.MethodPost && r.URL.Path == "/internal/progress":
		return taskProgressCall
	case r.Method == http.MethodPost && r.URL.Path == "/sdapi/v1/interrupt":
		return interruptCall
	}
	return ""
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := call{kind: kindOf(r), path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), raw: raw}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &c.body)
	}
	next, scripted := f.Record(c.kind, c)
	w.Header().Set("Content-Type", "application/json")
	user, pass, ok := r.BasicAuth()
	switch {
	case c.kind == "":
		f.T.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write(f.Examples.Get("error.404.json"))
		return
	case !ok || user+":"+pass != key:
		w.Header().Set("WWW-Authenticate", "Basic")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write(f.Examples.Get("error.401.json"))
		return
	case scripted:
		if next.Hang { // the job runs while the answer is held
			f.setRunning(c.body)
		}
		next.Serve(w, r)
		return
	}
	switch c.kind {
	case txt2imgCall, img2imgCall:
		f.generate(w, r, c)
	case progressCall:
		if r.URL.Query().Get("skip_current_image") != "true" {
			f.T.Errorf("GET /sdapi/v1/progress without skip_current_image=true: the server would encode a preview every read")
		}
		f.serveProgress(w)
	case taskProgressCall:
		f.mu.Lock()
		active := !f.otherJob && f.running != "" && c.body["id_task"] == f.running
		var p any
		if active {
			p = f.current
		}
		f.mu.Unlock()
		name := "internal-progress.waiting.json"
		if active {
			name = "internal-progress.active.json"
		}
		_, _ = w.Write(providertest.EditJSON(f.T, f.Examples.Get(name), func(doc map[string]any) {
			doc["progress"] = p
		}))
	case interruptCall:
		_, _ = w.Write([]byte("{}"))
	}
}

func (f *fake) setRunning(body map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running, _ = body["force_task_id"].(string)
}

func (f *fake) serveProgress(w http.ResponseWriter) {
	f.mu.Lock()
	name, p := "progress.idle.json", -1.0
	if len(f.progress) > 0 { // a job runs: this one, or another client's
		name, p, f.progress = "progress.running.json", f.progress[0], f.progress[1:]
		f.current = p
	}
	f.mu.Unlock()
	_, _ = w.Write(providertest.EditJSON(f.T, f.Examples.Get(name), func(doc map[string]any) {
		if p >= 0 {
			doc["progress"] = p
		}
	}))
}

func (f *fake) generate(w http.ResponseWriter, r *http.Request, c call) {
	example := "txt2img.request.json"
	if c.kind == img2imgCall {
		example = "img2img.request.json"
	}
	if err := f.check(c, f.documented(example)); err != nil {
		f.T.Errorf("%s breaks the documented request: %v", c.kind, err)
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write(f.Examples.Get("error.422.validation.json"))
		return
	}
	f.setRunning(c.body)
	defer f.setRunning(nil)
	f.mu.Lock()
	release := f.release
	f.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		case <-time.After(providertest.HangLimit):
			f.T.Errorf("the held answer was never released")
		}
	}
	size := provider.Size{W: int(c.body["width"].(float64)), H: int(c.body["height"].(float64))}
	seed := int64(c.body["seed"].(float64))
	if seed == -1 {
		seed = 2718281828
	}
	f.mu.Lock()
	if f.answerSeed != nil {
		seed = *f.answerSeed
	}
	if f.answerSize != nil {
		size = *f.answerSize
	}
	f.mu.Unlock()
	_, _ = w.Write(providertest.EditJSON(f.T, f.Examples.Get("txt2img.response.json"), func(doc map[string]any) {
		doc["images"] = []any{base64.StdEncoding.EncodeToString(f.PNGs.Of(size))}
		doc["parameters"] = c.body
		var info map[string]any
		providertest.Must(f.T, json.Unmarshal([]byte(doc["info"].(string)), &info))
		info["seed"], info["all_seeds"], info["width"], info["height"] = seed, []any{seed}, size.W, size.H
		b, _ := json.Marshal(info)
		doc["info"] = string(b)
	}))
}

// check checks a generation body: documented fields only, a prompt,
// sizes of multiples of 8, a whole seed, base64 init images for img2img.
func (f *fake) check(c call, fields []string) error {
	for k := range c.body {
		if !slices.Contains(fields, k) {
			return fmt.Errorf("unknown field %q", k)
		}
	}
	if p, _ := c.body["prompt"].(string); p == "" {
		return fmt.Errorf("no prompt")
	}
	for _, side := range []string{"width", "height"} {
		v, _ := c.body[side].(float64)
		if v < 64 || v > 4096 || int(v)%8 != 0 {
			return fmt.Errorf("%s %v is not a multiple of 8 from 64 to 4096", side, c.body[side])
		}
	}
	if s, ok := c.body["seed"].(float64); !ok || s != float64(int64(s)) || s < -1 {
		return fmt.Errorf("seed %v", c.body["seed"])
	}
	if c.kind == img2imgCall {
		imgs, _ := c.body["init_images"].([]any)
		if len(imgs) == 0 {
			return fmt.Errorf("no init_images")
		}
		for _, img := range imgs {
			s, _ := img.(string)
			if _, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s)); err != nil {
				return fmt.Errorf("init_images: %w", err)
			}
		}
	}
	return nil
}
