package main

import (
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/provider/providertest"
)

// bflFake is a Black Forest Labs-compatible API on loopback: each submit
// answers a polling_url on it; each task is Pending once, then ends with
// the status the prompt asks for ("moderate" gives Content Moderated),
// its sample served by the fake itself (PNG of the size asked).
type bflFake struct {
	*httptest.Server
	mu      sync.Mutex
	submits []map[string]any
	sizes   map[string][2]int
	reads   map[string]int
}

func newBFLFake(t *testing.T, key string) *bflFake {
	f := &bflFake{sizes: map[string][2]int{}, reads: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("x-key") != key && !strings.HasPrefix(r.URL.Path, "/delivery/") {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"detail":"Not authenticated"}`)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/flux-pro-1.1":
			var in map[string]any
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				t.Errorf("submit: %v", err)
			}
			id := fmt.Sprintf("task-%d", len(f.submits))
			f.submits = append(f.submits, in)
			f.sizes[id] = [2]int{int(in["width"].(float64)), int(in["height"].(float64))}
			if strings.Contains(in["prompt"].(string), "moderate") {
				f.sizes[id] = [2]int{-1, -1}
			}
			fmt.Fprintf(w, `{"id":%q,"polling_url":%q}`, id, f.URL+"/v1/get_result?id="+id)
		case r.Method == http.MethodGet && r.URL.Path == "/v1/get_result":
			id := r.URL.Query().Get("id")
			f.reads[id]++
			switch {
			case f.reads[id] == 1:
				fmt.Fprintf(w, `{"id":%q,"status":"Pending","result":null,"progress":0.5}`, id)
			case f.sizes[id][0] < 0:
				fmt.Fprintf(w, `{"id":%q,"status":"Content Moderated","result":null,"details":{"Moderation Reasons":["Explicit"]}}`, id)
			default:
				fmt.Fprintf(w, `{"id":%q,"status":"Ready","result":{"sample":%q,"seed":7}}`, id, f.URL+"/delivery/"+id+"/sample.png?sig=x")
			}
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/delivery/"):
			s := f.sizes[strings.Split(r.URL.Path, "/")[2]]
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(providertest.PNG(s[0], s[1]))
		default:
			t.Errorf("bfl fake: unexpected %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// TestServeBFL: imagegen serve -model bfl/flux-pro-1.1 against a
// BFL-compatible API: a 3:2 task succeeds through polling_url and
// result.sample, with the prompt, seed and a 3:2 size sent; a task whose
// image is Content Moderated ends failed with content_policy, refunded;
// the key is never logged.
func TestServeBFL(t *testing.T) {
	is := is.New(t)
	const bflKey, key = "bfl-test-secret-key", "test-demo-key-0123456789"
	f := newBFLFake(t, bflKey)
	s := startServe(t, map[string]string{"BFL_API_KEY": bflKey, "BFL_BASE_URL": f.URL},
		"-model", "bfl/flux-pro-1.1", "-demo-key", key, "-demo-credits", "5", "-rate-limit", "1000",
		"-allow-private-urls") // the fake's sample is on loopback

	code, sub := s.call(t, "POST", "/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a red fox","aspect_ratio":"3:2","seed":42}`)
	is.Equal(code, http.StatusCreated)
	is.Equal(sub["credits_remaining"], 3.0) // flux-pro-1.1 costs 2
	task := s.waitTask(t, key, sub["task_id"].(string))
	is.Equal(task["status"], "success")
	resp, err := http.Get(task["images"].([]any)[0].(string))
	is.NoErr(err)
	defer resp.Body.Close()
	img, err := png.Decode(resp.Body)
	is.NoErr(err)
	is.Equal(img.Bounds().Dx()*2, img.Bounds().Dy()*3) // 3:2
	f.mu.Lock()
	first := f.submits[0]
	f.mu.Unlock()
	is.Equal(first["prompt"], "a red fox")
	is.Equal(first["seed"], 42.0)
	is.Equal([]any{first["width"], first["height"]}, []any{1248.0, 832.0})

	code, sub = s.call(t, "POST", "/api/v1/generate", key, `{"scene":"text-to-image","prompt":"please moderate this","aspect_ratio":"1:1"}`)
	is.Equal(code, http.StatusCreated)
	is.Equal(sub["credits_remaining"], 1.0)
	task = s.waitTask(t, key, sub["task_id"].(string))
	is.Equal(task["status"], "failed")
	is.Equal(task["error_code"], "content_policy")
	_, credits := s.call(t, "GET", "/api/v1/credits", key, "")
	is.Equal(credits["credits_remaining"], 3.0) // refunded

	is.NoErr(s.stop())
	is.True(!strings.Contains(s.stderr.String()+s.stdout.String(), bflKey))
}
