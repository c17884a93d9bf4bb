package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// comfyFake is a ComfyUI-compatible server on loopback: uploads are
// kept under a name of its own, each prompt is done at once (its
// history written) and its messages sent to its client's websocket,
// its image a PNG of the workflow's latent (or ImageScale) size.
type comfyFake struct {
	*httptest.Server
	t     *testing.T
	mu    sync.Mutex
	conns map[string]*websocket.Conn
	// connected is closed, and replaced, when a websocket joins conns.
	connected chan struct{}
	prompts   []map[string]any
	uploads   []string
	sizes     map[string][2]int
	// release, when a prompt's text says "slowly", holds its end (after
	// its progress message) until it is closed.
	release chan struct{}
	slow    map[string]bool
}

func newComfyFake(t *testing.T) *comfyFake {
	f := &comfyFake{t: t, conns: map[string]*websocket.Conn{}, connected: make(chan struct{}), sizes: map[string][2]int{}, release: make(chan struct{}), slow: map[string]bool{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *comfyFake) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/ws":
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns[r.URL.Query().Get("clientId")] = conn
		close(f.connected)
		f.connected = make(chan struct{})
		f.mu.Unlock()
		for {
			if _, _, err := conn.Read(context.Background()); err != nil {
				return
			}
		}
	case r.URL.Path == "/upload/image":
		file, hdr, err := r.FormFile("image")
		if err != nil || r.FormValue("type") != "input" {
			f.t.Errorf("upload: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_, _ = io.Copy(io.Discard, file)
		name := "in-" + hdr.Filename
		f.mu.Lock()
		f.uploads = append(f.uploads, name)
		f.mu.Unlock()
		fmt.Fprintf(w, `{"name":%q,"subfolder":"","type":"input"}`, name)
	case r.URL.Path == "/prompt":
		var body struct {
			Prompt   map[string]any `json:"prompt"`
			ClientID string         `json:"client_id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			f.t.Errorf("prompt: %v", err)
		}
		f.mu.Lock()
		id := fmt.Sprintf("prompt-%d", len(f.prompts))
		f.prompts = append(f.prompts, body.Prompt)
		for _, n := range body.Prompt {
			node := n.(map[string]any)
			if text, _ := node["inputs"].(map[string]any)["text"].(string); strings.Contains(text, "slowly") {
				f.slow[id] = true
			}
			if c := node["class_type"]; c == "EmptyLatentImage" || c == "ImageScale" {
				in := node["inputs"].(map[string]any)
				f.sizes[id] = [2]int{int(in["width"].(float64)), int(in["height"].(float64))}
			}
		}
		f.mu.Unlock()
		fmt.Fprintf(w, `{"prompt_id":%q,"number":1,"node_errors":{}}`, id)
		go f.run(body.ClientID, id)
	case strings.HasPrefix(r.URL.Path, "/history/"):
		id := strings.TrimPrefix(r.URL.Path, "/history/")
		fmt.Fprintf(w, `{%q:{"outputs":{"9":{"images":[{"filename":"%s.png","subfolder":"","type":"output"}]}},"status":{"status_str":"success","completed":true,"messages":[]}}}`, id, id)
	case r.URL.Path == "/view":
		f.mu.Lock()
		s := f.sizes[strings.TrimSuffix(r.URL.Query().Get("filename"), ".png")]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(providertest.PNG(s[0], s[1]))
	default:
		f.t.Errorf("comfy fake: unexpected %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
	}
}

// run sends a prompt's messages: progress, then executing with node null.
func (f *comfyFake) run(client, id string) {
	conn := f.conn(client)
	if conn == nil {
		f.t.Errorf("no websocket for client %s in 10s", client)
		return
	}
	ctx := context.Background()
	_ = conn.Write(ctx, websocket.MessageText, []byte(fmt.Sprintf(`{"type":"progress","data":{"value":10,"max":20,"prompt_id":%q,"node":"3"}}`, id)))
	f.mu.Lock()
	slow := f.slow[id]
	f.mu.Unlock()
	if slow {
		select {
		case <-f.release:
		case <-time.After(time.Minute):
			f.t.Errorf("prompt %s was never released", id)
		}
	}
	_ = conn.Write(ctx, websocket.MessageText, []byte(fmt.Sprintf(`{"type":"executing","data":{"node":null,"prompt_id":%q}}`, id)))
}

// conn is the websocket of client, once it has connected, or nil if it
// has not within 10 s. It waits on connections, not on a clock: it runs
// on the fake's goroutines, where a test may not be failed at once.
func (f *comfyFake) conn(client string) *websocket.Conn {
	timeout := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		conn, connected := f.conns[client], f.connected
		f.mu.Unlock()
		if conn != nil {
			return conn
		}
		select {
		case <-connected:
		case <-timeout:
			return nil
		}
	}
}

// input is an input of the node of class in prompt i.
func (f *comfyFake) input(i int, class, name string) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.prompts[i] {
		node := n.(map[string]any)
		if node["class_type"] == class {
			return node["inputs"].(map[string]any)[name]
		}
	}
	return nil
}

// texts are the CLIPTextEncode texts of prompt i, sorted.
func (f *comfyFake) texts(i int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, n := range f.prompts[i] {
		node := n.(map[string]any)
		if node["class_type"] == "CLIPTextEncode" {
			out = append(out, node["inputs"].(map[string]any)["text"].(string))
		}
	}
	slices.Sort(out)
	return out
}

// TestServeComfyUI: imagegen serve -model comfyui against a
// ComfyUI-compatible server: text-to-image posts a workflow carrying
// the prompt, the task's seed and a latent of the requested ratio;
// image-to-image loads the reference by the name /upload/image
// returned; both succeed. A running prompt's websocket progress shows in
// the task's full view (adapter, worker, store and API together).
func TestServeComfyUI(t *testing.T) {
	is := is.New(t)
	const key = "test-demo-key-0123456789"
	f := newComfyFake(t)
	refs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(providertest.PNG(800, 600)) // 4:3
	}))
	defer refs.Close()
	s := startServe(t, map[string]string{"COMFYUI_BASE_URL": f.URL},
		"-model", "comfyui", "-demo-key", key, "-demo-credits", "5", "-rate-limit", "1000",
		"-allow-private-urls") // the reference is on loopback

	code, sub := s.call(t, "POST", "/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a red fox","aspect_ratio":"9:16","seed":99}`)
	is.Equal(code, http.StatusCreated)
	task := s.waitTask(t, key, sub["task_id"].(string))
	is.Equal(task["status"], "success")
	w, h := imageSize(t, task["images"].([]any)[0].(string))
	is.Equal(w*16, h*9)
	is.Equal(f.texts(0), []string{"", "a red fox"}) // the prompt, and the empty negative prompt
	is.Equal(f.input(0, "KSampler", "seed"), 99.0)
	is.Equal([]any{f.input(0, "EmptyLatentImage", "width"), f.input(0, "EmptyLatentImage", "height")}, []any{792.0, 1408.0})
	is.Equal(f.input(0, "CheckpointLoaderSimple", "ckpt_name"), "sd_xl_base_1.0.safetensors")

	code, sub = s.call(t, "POST", "/api/v1/generate", key, fmt.Sprintf(`{"scene":"image-to-image","prompt":"as a watercolour","image_input":[%q]}`, refs.URL+"/fox.png"))
	is.Equal(code, http.StatusCreated)
	task = s.waitTask(t, key, sub["task_id"].(string))
	is.Equal(task["status"], "success")
	w, h = imageSize(t, task["images"].([]any)[0].(string))
	is.Equal(w*3, h*4) // auto: the reference's 4:3
	f.mu.Lock()
	uploaded := append([]string(nil), f.uploads...)
	f.mu.Unlock()
	is.Equal(len(uploaded), 1)
	is.Equal(f.input(1, "LoadImage", "image"), uploaded[0])

	// While a prompt runs, the progress ComfyUI sends on the websocket
	// (10 of 20 steps) shows in the task's full view; the basic view
	// stays task_id and status.
	code, sub = s.call(t, "POST", "/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a fox, slowly"}`)
	is.Equal(code, http.StatusCreated)
	id := sub["task_id"].(string)
	var full map[string]any
	testenv.Eventually(t, 20*time.Second, "the full view shows progress", func() bool {
		_, full = s.call(t, "GET", "/api/v1/tasks/"+id+"?view=full", key, "")
		return full["progress"] != nil
	})
	is.Equal(full["status"], "processing")
	is.Equal(full["progress"], 0.5)
	_, basic := s.call(t, "GET", "/api/v1/tasks/"+id, key, "")
	is.Equal(len(basic), 2) // task_id and status
	close(f.release)
	task = s.waitTask(t, key, id)
	is.Equal(task["status"], "success")
	is.NoErr(s.stop())
}

// -model comfyui/NAME takes the operator's workflow NAME.json from
// COMFYUI_WORKFLOWS; a workflow file that is not one stops the start.
func TestComfyUIWorkflowsFromADirectory(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	wf := `{"1":{"class_type":"CLIPTextEncode","inputs":{"text":"{{prompt}}"}},"9":{"class_type":"SaveImage","inputs":{"images":["1",0]}}}`
	is.NoErr(os.WriteFile(filepath.Join(dir, "portrait.json"), []byte(wf), 0o600))
	is.NoErr(os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"nodes":[]}`), 0o600))
	env := func(k string) string {
		return map[string]string{"COMFYUI_BASE_URL": "http://127.0.0.1:8188", "COMFYUI_WORKFLOWS": dir}[k]
	}
	m, err := newModel("comfyui/portrait", modelDeps{getenv: env})
	is.NoErr(err)
	plan, err := m.Plan(providertest.T2I("x", "1:1"))
	is.NoErr(err)
	is.Equal(plan.Model, "comfyui/portrait")
	is.True(!plan.Seeded) // the workflow has no {{seed}}
	_, err = newModel("comfyui/broken", modelDeps{getenv: env})
	is.True(err != nil && strings.Contains(err.Error(), "not the API format"))
	m, err = newModel("comfyui/v1-5-pruned-emaonly.safetensors", modelDeps{getenv: env}) // no such workflow: a checkpoint
	is.NoErr(err)
	plan, _ = m.Plan(providertest.T2I("x", "1:1"))
	is.Equal(plan.Model, "comfyui/v1-5-pruned-emaonly.safetensors")
}
