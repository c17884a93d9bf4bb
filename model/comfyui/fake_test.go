package comfyui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// key is the Bearer token of the authenticating proxy in front of the
// fake.
const key = "comfy-proxy-token-0123456789abcdef"

// Kinds of call the fake receives.
const (
	wsCall        = "ws"
	uploadCall    = "upload"
	promptCall    = "prompt"
	historyCall   = "history"
	viewCall      = "view"
	queueCall     = "queue"
	dequeueCall   = "queue-delete"
	interruptCall = "interrupt"
)

type answer = providertest.Answer

// call is one request the fake received.
type call struct {
	kind   string
	path   string
	query  string
	header http.Header
	raw    []byte
}

// checkpoints are the checkpoints the fake server has.
var checkpoints = []string{"sd_xl_base_1.0.safetensors", "v1-5-pruned-emaonly.safetensors"}

// nodeInputs are the inputs of the node classes the fake knows.
var nodeInputs = map[string][]string{
	"KSampler":               {"seed", "steps", "cfg", "sampler_name", "scheduler", "denoise", "model", "positive", "negative", "latent_image"},
	"CheckpointLoaderSimple": {"ckpt_name"},
	"EmptyLatentImage":       {"width", "height", "batch_size"},
	"CLIPTextEncode":         {"text", "clip"},
	"VAEDecode":              {"samples", "vae"},
	"VAEEncode":              {"pixels", "vae"},
	"SaveImage":              {"filename_prefix", "images"},
	"PreviewImage":           {"images"},
	"LoadImage":              {"image"},
	"ImageScale":             {"image", "upscale_method", "width", "height", "crop"},
}

// job is a prompt the fake took.
type job struct {
	id, client string
	prompt     map[string]any
	size       provider.Size
	history    []byte // written once it ended
	reads      int
	state      string // pending, running, done
}

// fake is a ComfyUI server on 127.0.0.1 behind a proxy that wants the
// Bearer key, following ComfyUI's routes and messages
// (testdata/README.md). It checks every workflow against the node
// classes it knows and its checkpoints and uploads (a 400 with
// node_errors otherwise, as ComfyUI validates), runs each prompt at once
// (its history written before POST /prompt answers, so that polls are
// deterministic) and sends its messages to the websocket of its
// client_id: execution_start, progress steps, execution_success and
// executing with node null. Its images are PNGs of the latent's size.
type fake struct {
	providertest.FakeAPI[call]

	mu        sync.Mutex
	conns     map[string]*websocket.Conn
	connected map[string]chan struct{} // closed once the client's websocket is registered
	uploads   map[string][]byte
	jobs      map[string]*job
	latest    *job // the last prompt taken: /view serves its image
	// Settings, set before the generation.
	noWebsocket  bool   // /ws answers 404
	stuck        string // "pending" or "running": prompts never end
	pendingPolls int    // history reads answered empty first
	fail         string // "execution_error" or "execution_interrupted": prompts fail so
	noOutputs    bool   // prompts save no image
	progress     int    // progress steps sent (of 25); default 3
	breakSocket  bool   // the socket closes after the first progress
	foreign      bool   // messages of another prompt come first
	nodeErrors   bool   // POST /prompt takes the prompt with node_errors
	silent       bool   // the websocket carries no message of the prompts
	// oldServer ignores a prompt_id sent with POST /prompt and mints its
	// own, as servers before 0.3.45 do.
	oldServer bool
	// takenAnswer, when set, is served to POST /prompt instead of the
	// fake's answer, after the prompt was queued (an answer lost or
	// garbled on its way back).
	takenAnswer *answer
	onTaken     func() // called once a prompt is queued, before its answer
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{conns: map[string]*websocket.Conn{}, connected: map[string]chan struct{}{}, uploads: map[string][]byte{}, jobs: map[string]*job{}, progress: 3}
	f.Start(t, f.serve)
	return f
}

// newModel points c at f, with f's key unless c names its own.
func newModel(t *testing.T, f *fake, c comfyui.Config) (*comfyui.Model, *providertest.InstantClock) {
	clock := providertest.Configure(&c.Config, f.Server.URL, key)
	if c.HTTPClient == nil {
		c.HTTPClient = providertest.LoopbackClient(t, f.Server)
	}
	return providertest.MustNew(t, comfyui.New, c), clock
}

// prompts are the bodies of the POST /prompt calls received.
func (f *fake) prompts(t *testing.T) []map[string]any {
	var out []map[string]any
	for _, c := range f.Calls() {
		if c.kind == promptCall {
			out = append(out, providertest.JSON(t, c.raw).(map[string]any))
		}
	}
	return out
}

// node is an input of a node of the latest prompt.
func (f *fake) node(t *testing.T, id, input string) any {
	p := f.prompts(t)
	if len(p) == 0 {
		t.Fatal("no prompt received")
	}
	return p[len(p)-1]["prompt"].(map[string]any)[id].(map[string]any)["inputs"].(map[string]any)[input]
}

func kindOf(r *http.Request) string {
	switch {
	case r.URL.Path == "/ws":
		return wsCall
	case r.Method == http.MethodPost && r.URL.Path == "/upload/image":
		return uploadCall
	case r.Method == http.MethodPost && r.URL.Path == "/prompt":
		return promptCall
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/history/"):
		return historyCall
	case r.Method == http.MethodGet && r.URL.Path == "/view":
		return viewCall
	case r.Method == http.MethodGet && r.URL.Path == "/queue":
		return queueCall
	case r.Method == http.MethodPost && r.URL.Path == "/queue":
		return dequeueCall
	case r.Method == http.MethodPost && r.URL.Path == "/interrupt":
		return interruptCall
	}
	return ""
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	var raw []byte
	if r.URL.Path != "/ws" {
		raw, _ = io.ReadAll(r.Body)
	}
	c := call{kind: kindOf(r), path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), raw: raw}
	next, scripted := f.Record(c.kind, c)
	switch {
	case c.kind == "":
		f.T.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	case r.Header.Get("Authorization") != "Bearer "+key:
		http.Error(w, "401 Unauthorized", http.StatusUnauthorized)
		return
	case scripted:
		next.Serve(w, r)
		return
	}
	switch c.kind {
	case wsCall:
		f.websocket(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch c.kind {
	case uploadCall:
		f.upload(w, r, raw)
	case promptCall:
		f.prompt(w, r, raw)
	case historyCall:
		f.history(w, strings.TrimPrefix(r.URL.Path, "/history/"))
	case viewCall:
		f.view(w, r)
	case queueCall:
		f.queue(w)
	case dequeueCall:
		var body struct{ Delete []string }
		providertest.Must(f.T, json.Unmarshal(raw, &body))
		f.mu.Lock()
		for _, id := range body.Delete {
			if j, ok := f.jobs[id]; ok && j.state == "pending" {
				j.state = "deleted"
			}
		}
		f.mu.Unlock()
	case interruptCall:
		var body struct {
			PromptID string `json:"prompt_id"`
		}
		providertest.Must(f.T, json.Unmarshal(raw, &body))
		f.mu.Lock()
		if j, ok := f.jobs[body.PromptID]; ok && j.state == "running" {
			j.state = "interrupted"
		}
		f.mu.Unlock()
	}
}

func (f *fake) websocket(w http.ResponseWriter, r *http.Request) {
	if f.noWebsocket {
		http.NotFound(w, r)
		return
	}
	client := r.URL.Query().Get("clientId")
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		f.T.Errorf("websocket: %v", err)
		return
	}
	f.mu.Lock()
	if f.conns[client] == nil {
		close(f.connectedLocked(client))
	}
	f.conns[client] = conn
	f.mu.Unlock()
	f.send(client, f.message("ws.status.json", ""))
	for { // until the client goes
		if _, _, err := conn.Read(context.Background()); err != nil {
			return
		}
	}
}

// message is a websocket example with the prompt id set.
func (f *fake) message(name, id string) []byte {
	return providertest.EditJSON(f.T, f.Examples.Get(name), func(doc map[string]any) {
		if data, ok := doc["data"].(map[string]any); ok && id != "" {
			data["prompt_id"] = id
		}
	})
}

// connectedLocked is the channel closed once client's websocket is
// registered; f.mu is held.
func (f *fake) connectedLocked(client string) chan struct{} {
	ch, ok := f.connected[client]
	if !ok {
		ch = make(chan struct{})
		f.connected[client] = ch
	}
	return ch
}

// send writes a message to the client's websocket, waiting up to 2 s
// for it to be registered; it reports whether it could.
func (f *fake) send(client string, msg []byte) bool {
	f.mu.Lock()
	registered := f.connectedLocked(client)
	f.mu.Unlock()
	select {
	case <-registered:
	case <-time.After(2 * time.Second):
		return false
	}
	f.mu.Lock()
	conn := f.conns[client]
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, msg) == nil
}

func (f *fake) upload(w http.ResponseWriter, r *http.Request, raw []byte) {
	_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	fields, files, err := providertest.ParseForm(raw, params["boundary"])
	if err != nil || len(files) != 1 || files[0].Name != "image" || files[0].Filename == "" {
		f.T.Errorf("upload: %v, %d files", err, len(files))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if !slices.Equal(fields["type"], []string{"input"}) || !slices.Equal(fields["overwrite"], []string{"true"}) {
		f.T.Errorf("upload fields %v", fields)
	}
	name := "uploaded-" + files[0].Filename // so that the adapter must use the name answered
	f.mu.Lock()
	f.uploads[name] = files[0].Data
	f.mu.Unlock()
	_, _ = w.Write(providertest.EditJSON(f.T, f.Examples.Get("upload.response.json"), func(doc map[string]any) { doc["name"] = name }))
}

func (f *fake) prompt(w http.ResponseWriter, r *http.Request, raw []byte) {
	var body struct {
		Prompt   map[string]any `json:"prompt"`
		ClientID string         `json:"client_id"`
		PromptID *string        `json:"prompt_id"`
	}
	providertest.Must(f.T, json.Unmarshal(raw, &body))
	if body.PromptID != nil && !f.oldServer && !canonicalUUID(*body.PromptID) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(f.Examples.Get("prompt.error.invalid-prompt-id.json"))
		return
	}
	size, err := f.check(body.Prompt)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(providertest.EditJSON(f.T, f.Examples.Get("prompt.error.400.json"), func(doc map[string]any) {
			doc["node_errors"].(map[string]any)["4"].(map[string]any)["errors"].([]any)[0].(map[string]any)["details"] = err.Error()
		}))
		return
	}
	f.mu.Lock()
	j := &job{id: fmt.Sprintf("2f1c8b7e-4d3a-4c55-9a61-%012d", len(f.jobs)), client: body.ClientID, prompt: body.Prompt, size: size, state: "done"}
	if body.PromptID != nil && !f.oldServer {
		j.id = *body.PromptID
	}
	f.jobs[j.id] = j
	f.latest = j
	switch {
	case f.stuck != "":
		j.state = f.stuck
	case f.fail != "":
		j.history = f.historyOf(j, "history.error.json")
	case f.noOutputs:
		j.history = providertest.EditJSON(f.T, f.historyOf(j, "history.success.json"), func(doc map[string]any) {
			doc[j.id].(map[string]any)["outputs"] = map[string]any{}
		})
	default:
		j.history = f.historyOf(j, "history.success.json")
	}
	f.mu.Unlock()
	if f.onTaken != nil {
		f.onTaken()
	}
	if f.takenAnswer != nil {
		f.takenAnswer.Serve(w, r)
		return
	}
	_, _ = w.Write(providertest.EditJSON(f.T, f.Examples.Get("prompt.response.json"), func(doc map[string]any) {
		doc["prompt_id"] = j.id
		if f.nodeErrors {
			doc["node_errors"] = providertest.JSON(f.T, f.Examples.Get("prompt.error.400.json")).(map[string]any)["node_errors"]
		}
	}))
	if f.stuck != "pending" && !f.noWebsocket && !f.silent {
		go f.run(j)
	}
}

// states is the state of each prompt taken, by id.
func (f *fake) states() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for id, j := range f.jobs {
		out[id] = j.state
	}
	return out
}

// canonicalUUID reports whether s is a UUID in the canonical lowercase
// hyphenated form, the only prompt_id the newest servers take.
func canonicalUUID(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}

// run sends a prompt's messages to its client's websocket.
func (f *fake) run(j *job) {
	if f.foreign {
		f.send(j.client, f.message("ws.progress.json", "another-prompt"))
		f.send(j.client, f.message("ws.executing.done.json", "another-prompt"))
	}
	for _, name := range []string{"ws.execution_start.json", "ws.execution_cached.json", "ws.executing.json"} {
		f.send(j.client, f.message(name, j.id))
	}
	for i := 1; i <= f.progress; i++ {
		f.send(j.client, providertest.EditJSON(f.T, f.message("ws.progress.json", j.id), func(doc map[string]any) {
			doc["data"].(map[string]any)["value"] = 25 * i / f.progress
		}))
		if f.breakSocket {
			f.mu.Lock()
			conn := f.conns[j.client]
			f.mu.Unlock()
			_ = conn.CloseNow()
			return
		}
	}
	if f.stuck == "running" {
		return
	}
	if f.fail != "" {
		f.send(j.client, f.message("ws."+f.fail+".json", j.id))
	} else {
		f.send(j.client, f.message("ws.executed.json", j.id))
		f.send(j.client, f.message("ws.execution_success.json", j.id))
	}
	f.send(j.client, f.message("ws.executing.done.json", j.id))
}

// historyOf is an example history entry made j's.
func (f *fake) historyOf(j *job, name string) []byte {
	var doc map[string]any
	providertest.Must(f.T, json.Unmarshal(f.Examples.Get(name), &doc))
	for _, entry := range doc {
		e := entry.(map[string]any)
		e["prompt"] = []any{3, j.id, j.prompt, map[string]any{"client_id": j.client}, []any{"9"}}
		if name == "history.error.json" && f.fail == "execution_interrupted" {
			msgs := e["status"].(map[string]any)["messages"].([]any)
			msgs[len(msgs)-1] = []any{"execution_interrupted", providertest.JSON(f.T, f.Examples.Get("ws.execution_interrupted.json")).(map[string]any)["data"]}
		}
		b, _ := json.Marshal(map[string]any{j.id: e})
		return b
	}
	return nil
}

func (f *fake) history(w http.ResponseWriter, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if ok {
		j.reads++
	}
	if !ok || j.history == nil || j.reads <= f.pendingPolls {
		_, _ = w.Write(f.Examples.Get("history.empty.json"))
		return
	}
	_, _ = w.Write(j.history)
}

func (f *fake) view(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("filename") != "imagegen_00001_.png" || q.Get("type") != "output" || !q.Has("subfolder") {
		f.T.Errorf("view of %s", r.URL.RawQuery)
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	size := f.latest.size
	f.mu.Unlock()
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(f.PNGs.Of(size))
}

func (f *fake) queue(w http.ResponseWriter) {
	f.mu.Lock()
	running, pending := []any{}, []any{}
	for _, j := range f.jobs {
		item := []any{3, j.id, j.prompt, map[string]any{"client_id": j.client}, []any{"9"}}
		switch j.state {
		case "running":
			running = append(running, item)
		case "pending":
			pending = append(pending, item)
		}
	}
	f.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"queue_running": running, "queue_pending": pending})
	_, _ = w.Write(b)
}

// check validates a workflow as ComfyUI would, and returns the size of
// the image it makes: its latent's, or its ImageScale's.
func (f *fake) check(nodes map[string]any) (provider.Size, error) {
	var size provider.Size
	hasOutput := false
	for id, n := range nodes {
		node := n.(map[string]any)
		class, _ := node["class_type"].(string)
		inputs, _ := node["inputs"].(map[string]any)
		known, ok := nodeInputs[class]
		if !ok {
			return size, fmt.Errorf("node %s: unknown class %q", id, class)
		}
		for k, v := range inputs {
			if !slices.Contains(known, k) {
				return size, fmt.Errorf("node %s (%s): unknown input %q", id, class, k)
			}
			// A prompt may hold braces (ComfyUI takes any text; the tests
			// check the texts they expect): elsewhere "{{" is a
			// placeholder left unfilled.
			if s, isText := v.(string); isText && k != "text" && strings.Contains(s, "{{") {
				return size, fmt.Errorf("node %s (%s): a placeholder left in %s: %q", id, class, k, s)
			}
			if link, isLink := v.([]any); isLink {
				if _, linked := nodes[fmt.Sprint(link[0])]; !linked || len(link) != 2 {
					return size, fmt.Errorf("node %s (%s): %s links to no node", id, class, k)
				}
			}
		}
		switch class {
		case "CheckpointLoaderSimple":
			if !slices.Contains(checkpoints, inputs["ckpt_name"].(string)) {
				return size, fmt.Errorf("ckpt_name: '%s' not in %q", inputs["ckpt_name"], checkpoints)
			}
		case "EmptyLatentImage", "ImageScale":
			w, wok := inputs["width"].(float64)
			h, hok := inputs["height"].(float64)
			if !wok || !hok || int(w)%8 != 0 || int(h)%8 != 0 {
				return size, fmt.Errorf("node %s (%s): width and height must be numbers, multiples of 8 (got %v, %v)", id, class, inputs["width"], inputs["height"])
			}
			size = provider.Size{W: int(w), H: int(h)}
		case "KSampler":
			if s, ok := inputs["seed"].(float64); !ok || s < 0 || s != float64(int64(s)) {
				return size, fmt.Errorf("node %s: seed %v", id, inputs["seed"])
			}
		case "LoadImage":
			f.mu.Lock()
			_, uploaded := f.uploads[inputs["image"].(string)]
			f.mu.Unlock()
			if !uploaded {
				return size, fmt.Errorf("node %s: Invalid image file: %v", id, inputs["image"])
			}
		case "SaveImage", "PreviewImage":
			hasOutput = true
		}
	}
	if !hasOutput {
		return size, fmt.Errorf("prompt has no outputs")
	}
	return size, nil
}
