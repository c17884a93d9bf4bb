package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/provider/providertest"
)

// sdapiFake is an sdapi server on loopback with --api-auth: txt2img and
// img2img answer a PNG of the size asked and, in info, the seed sent (or
// usedSeed when set, as a server that chose its own); progress reads
// answer whether one of those is under way.
type sdapiFake struct {
	*httptest.Server
	mu       sync.Mutex
	calls    []sdapiCall
	running  atomic.Int64 // txt2img and img2img calls being answered
	usedSeed int64        // when not 0, the seed info reports
}

type sdapiCall struct {
	path string
	body map[string]any
}

func newSDAPIFake(t *testing.T, user, pass string) *sdapiFake {
	f := &sdapiFake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"detail":"Incorrect username or password"}`)
			return
		}
		if r.Method == http.MethodPost && r.URL.Path == "/internal/progress" {
			// Asked every second while a generation runs (slower than
			// that on a loaded machine): the fake models no steps, so
			// it says whether a job is under way, with no progress.
			fmt.Fprintf(w, `{"active":%t,"queued":false,"completed":false,"progress":0}`, f.running.Load() > 0)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/sdapi/v1/progress" {
			// Read between two of those while a job runs: no steps either.
			fmt.Fprintf(w, `{"progress":0,"eta_relative":0,"state":{"job":"","job_count":%d},"current_image":null,"textinfo":null}`, f.running.Load())
			return
		}
		if r.URL.Path != "/sdapi/v1/txt2img" && r.URL.Path != "/sdapi/v1/img2img" {
			t.Errorf("sdapi fake: unexpected %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusNotFound)
			return
		}
		f.running.Add(1)
		defer f.running.Add(-1)
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("sdapi fake: %v", err)
		}
		f.mu.Lock()
		f.calls = append(f.calls, sdapiCall{r.URL.Path, body})
		f.mu.Unlock()
		img := base64.StdEncoding.EncodeToString(providertest.PNG(int(body["width"].(float64)), int(body["height"].(float64))))
		seed := int64(body["seed"].(float64))
		if f.usedSeed != 0 {
			seed = f.usedSeed
		}
		fmt.Fprintf(w, `{"images":[%q],"parameters":{},"info":"{\"seed\": %d}"}`, img, seed)
	}))
	t.Cleanup(f.Close)
	return f
}

// TestServeA1111: imagegen serve -model a1111 against an sdapi server:
// text-to-image sends the prompt, the task's seed and a size of the
// requested ratio to txt2img, and the task's full view then shows the
// seed the server's info reports it used; image-to-image sends the
// reference (named by URL, fetched through the guarded fetcher) as
// base64 init_images to img2img. The password is never logged.
func TestServeA1111(t *testing.T) {
	is := is.New(t)
	const key = "test-demo-key-0123456789"
	f := newSDAPIFake(t, "imagegen", "gpu-s3cret")
	f.usedSeed = 4321
	ref := providertest.PNG(600, 800) // 3:4
	refs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(ref)
	}))
	defer refs.Close()
	s := startServe(t, map[string]string{"A1111_BASE_URL": f.URL, "A1111_API_KEY": "imagegen:gpu-s3cret"},
		"-model", "a1111/sd_xl_base_1.0.safetensors", "-demo-key", key, "-demo-credits", "5", "-rate-limit", "1000",
		"-allow-private-urls") // the reference is on loopback

	code, sub := s.call(t, "POST", "/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a red fox","aspect_ratio":"16:9","seed":1234}`)
	is.Equal(code, http.StatusCreated)
	is.Equal(sub["credits_remaining"], 4.0)
	task := s.waitTask(t, key, sub["task_id"].(string))
	is.Equal(task["status"], "success")
	w, h := imageSize(t, task["images"].([]any)[0].(string))
	is.Equal([]int{w, h}, []int{1408, 792})
	code, full := s.call(t, "GET", "/api/v1/tasks/"+sub["task_id"].(string)+"?view=full", key, "")
	is.Equal(code, http.StatusOK)
	is.Equal(full["seed"], 4321.0) // the server's, not the 1234 sent

	code, sub = s.call(t, "POST", "/api/v1/generate", key, fmt.Sprintf(`{"scene":"image-to-image","prompt":"as a watercolour","image_input":[%q]}`, refs.URL+"/fox.png"))
	is.Equal(code, http.StatusCreated)
	task = s.waitTask(t, key, sub["task_id"].(string))
	is.Equal(task["status"], "success")
	w, h = imageSize(t, task["images"].([]any)[0].(string))
	is.Equal(w*4, h*3) // auto: the reference's 3:4

	f.mu.Lock()
	calls := append([]sdapiCall(nil), f.calls...)
	f.mu.Unlock()
	is.Equal(len(calls), 2)
	t2i, i2i := calls[0], calls[1]
	is.Equal(t2i.path, "/sdapi/v1/txt2img")
	is.Equal(t2i.body["prompt"], "a red fox")
	is.Equal(t2i.body["seed"], 1234.0)
	is.Equal(t2i.body["override_settings"], map[string]any{"sd_model_checkpoint": "sd_xl_base_1.0.safetensors"})
	is.Equal(i2i.path, "/sdapi/v1/img2img")
	is.Equal(i2i.body["init_images"], []any{base64.StdEncoding.EncodeToString(ref)})
	is.Equal([]any{i2i.body["width"], i2i.body["height"]}, []any{888.0, 1184.0})

	is.NoErr(s.stop())
	is.True(!strings.Contains(s.stderr.String()+s.stdout.String(), "gpu-s3cret"))
}

// imageSize downloads an image of the service and returns its size.
func imageSize(t *testing.T, url string) (int, int) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	cfg, err := png.DecodeConfig(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Width, cfg.Height
}

// A self-hosted server needs its address; its key is optional.
func TestSelfHostedNeedsItsAddress(t *testing.T) {
	is := is.New(t)
	_, err := newModel("a1111", modelDeps{getenv: noEnv})
	is.True(err != nil && strings.Contains(err.Error(), "A1111_BASE_URL (e.g. http://127.0.0.1:7860)"))
	_, err = newModel("comfyui", modelDeps{getenv: noEnv})
	is.True(err != nil && strings.Contains(err.Error(), "COMFYUI_BASE_URL (e.g. http://127.0.0.1:8188)"))
	env := func(k string) string { return map[string]string{"A1111_BASE_URL": "http://127.0.0.1:7860"}[k] }
	m, err := newModel("a1111", modelDeps{getenv: env})
	is.NoErr(err)
	is.True(m != nil)
}
