package openai_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

const key = "sk-proj-TESTKEY-0123456789abcdefghij"

// answer is a scripted failure the fake serves before it succeeds.
type answer = providertest.Answer

// part is one multipart file part the fake received.
type part = providertest.FormFile

// call is one request the fake received.
type call struct {
	path   string
	header http.Header
	json   map[string]any      // generations
	fields map[string][]string // edits
	files  []part              // edits
}

// fake is an OpenAI Images API on 127.0.0.1 that follows OpenAI's
// OpenAPI description (testdata/README.md names the files): it
// validates every request against it, checks the key, serves scripted
// failures, then answers like the documented example responses with a
// PNG of the asked size.
type fake struct {
	providertest.FakeAPI[call]
	spec *specValidator
	// answerURL makes dall-e-3 answers carry the example's url even when
	// b64_json was asked for.
	answerURL bool
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{}
	f.Start(t, f.serve)
	f.spec = newSpecValidator(t, f.Server.URL+"/v1")
	t.Cleanup(func() {
		for _, err := range f.spec.errors() {
			t.Errorf("a request breaks the OpenAI spec: %v", err)
		}
	})
	return f
}

func (f *fake) baseURL() string { return f.Server.URL + "/v1" }

// png is a PNG of size ("1536x1024"; 1024x1024 for "auto" or none).
func (f *fake) png(size string) []byte {
	w, h, _ := strings.Cut(size, "x")
	wi, _ := strconv.Atoi(w)
	hi, _ := strconv.Atoi(h)
	if wi <= 0 || hi <= 0 {
		wi, hi = 1024, 1024
	}
	return f.PNGs.Of(provider.Size{W: wi, H: hi})
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.spec.validate(r, body)
	c := call{path: r.URL.Path, header: r.Header.Clone()}
	if mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		if c.fields, c.files, err = providertest.ParseForm(body, params["boundary"]); err != nil {
			f.T.Errorf("bad multipart body: %v", err)
		}
	} else if err := json.Unmarshal(body, &c.json); err != nil {
		f.T.Errorf("request body is not JSON: %v", err)
	}
	// Calls are of the kind "generations" or "edits".
	next, scripted := f.Record(strings.TrimPrefix(c.path, "/v1/images/"), c)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req_test")
	if r.Header.Get("Authorization") != "Bearer "+key {
		w.WriteHeader(http.StatusUnauthorized)
		// OpenAI's 401 names a masked key; this fake echoes it whole, to
		// check that the adapter scrubs it.
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		return
	}
	if scripted {
		next.Serve(w, r)
		return
	}
	_, _ = w.Write(f.success(c))
}

// success is the example answer of the model, with the picture replaced
// by a PNG of the size asked for.
func (f *fake) success(c call) []byte {
	model, size, format := str(c.json["model"]), str(c.json["size"]), str(c.json["response_format"])
	if c.fields != nil {
		model, size = first(c.fields["model"]), first(c.fields["size"])
	}
	if model == "dall-e-3" {
		return providertest.EditJSON(f.T, f.Examples.Get("generations.response.dall-e-3.json"), func(resp map[string]any) {
			if format == "b64_json" && !f.answerURL {
				item := resp["data"].([]any)[0].(map[string]any)
				delete(item, "url")
				item["b64_json"] = base64.StdEncoding.EncodeToString(f.png(size))
			}
		})
	}
	return providertest.EditJSON(f.T, f.Examples.Get("generations.response.gpt-image-1.json"), func(resp map[string]any) {
		resp["data"].([]any)[0].(map[string]any)["b64_json"] = base64.StdEncoding.EncodeToString(f.png(size))
		resp["size"] = size
	})
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
