package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/wire"
)

// openAIEnv is the API with the OpenAI-compatible endpoint at /v1.
type openAIEnv struct {
	*env
	schemas openapi3.Schemas // OpenAI's own
}

func newOpenAIEnv(t *testing.T, limit int, api ...func(*httpapi.Config)) *openAIEnv {
	t.Helper()
	e := newEnv(t, func(o *envOptions) {
		o.limit, o.openAI = limit, true
		o.api = func(c *httpapi.Config) {
			c.OpenAIWait = 30 * time.Second
			for _, f := range api {
				f(c)
			}
		}
	})
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(filepath.Join("testdata", "openai", "openapi.images-subset.yaml"))
	is.New(t).NoErr(err)
	return &openAIEnv{env: e, schemas: doc.Components.Schemas}
}

// generate posts body to /v1/images/generations while a worker runs the
// task, as `imagegen serve` would.
func (o *openAIEnv) generate(key, body string) *httptest.ResponseRecorder {
	return whileWorking(o.t, o.svc, func() *httptest.ResponseRecorder { return o.do("POST", "/v1/images/generations", key, body) })
}

// valid checks body against a schema of OpenAI's description.
func (o *openAIEnv) valid(t *testing.T, schema string, body []byte) {
	t.Helper()
	var v any
	is.New(t).NoErr(json.Unmarshal(body, &v))
	if err := o.schemas[schema].Value.VisitJSON(v); err != nil {
		t.Fatalf("answer does not follow OpenAI's %s: %v\n%s", schema, err, body)
	}
}

func readOpenAI(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "openai", name))
	is.New(t).NoErr(err)
	return b
}

// keys returns the field names of a JSON object, sorted.
func keys(t *testing.T, body []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	is.New(t).NoErr(json.Unmarshal(body, &m))
	return slices.Sorted(maps.Keys(m))
}

// likeExample checks that an error answer has the type and code of
// OpenAI's own example in testdata/openai/name.
func likeExample(t *testing.T, w *httptest.ResponseRecorder, name string) {
	t.Helper()
	is := is.New(t)
	var example, got map[string]map[string]any
	is.NoErr(json.Unmarshal(readOpenAI(t, name), &example))
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &got))
	is.Equal(got["error"]["type"], example["error"]["type"])
	is.Equal(got["error"]["code"], example["error"]["code"])
}

// errorShape checks an error answer against OpenAI's example and schema.
func (o *openAIEnv) errorShape(t *testing.T, w *httptest.ResponseRecorder, status int, typ, param, code string) {
	t.Helper()
	is := is.New(t)
	is.Equal(w.Code, status)
	is.Equal(w.Header().Get("Content-Type"), "application/json")
	o.valid(t, "ErrorResponse", w.Body.Bytes())
	var got, example struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &got))
	is.NoErr(json.Unmarshal(readOpenAI(t, "error.invalid_value.json"), &example))
	is.Equal(slices.Sorted(maps.Keys(got.Error)), slices.Sorted(maps.Keys(example.Error))) // message, type, param, code
	str := func(raw json.RawMessage) string {
		var s *string
		is.NoErr(json.Unmarshal(raw, &s))
		if s == nil {
			return ""
		}
		return *s
	}
	is.Equal(str(got.Error["type"]), typ)
	is.Equal(str(got.Error["param"]), param)
	is.Equal(str(got.Error["code"]), code)
	is.True(str(got.Error["message"]) != "")
}

func TestOpenAIGenerationsURL(t *testing.T) {
	is := is.New(t)
	o := newOpenAIEnv(t, 1000)
	req := readOpenAI(t, "generations.request.dall-e-3.json") // 1792x1024, hd, natural, url
	o.valid(t, "CreateImageRequest", req)

	w := o.generate(o.key, string(req))
	is.Equal(w.Code, http.StatusOK)
	o.valid(t, "ImagesResponse", w.Body.Bytes())
	// The shape of OpenAI's example answer, less DALL-E 3's revised_prompt.
	example := readOpenAI(t, "generations.response.dall-e-3.json")
	is.Equal(keys(t, w.Body.Bytes()), keys(t, example))
	var got httpapi.OpenAIImagesResponse
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &got))
	is.Equal(len(got.Data), 1)
	is.True(got.Created > 0)
	is.True(got.Data[0].B64JSON == "")

	// The URL serves the PNG, with no key.
	img := o.do("GET", strings.TrimPrefix(got.Data[0].URL, "https://img.example.test"), "", "")
	is.Equal(img.Code, http.StatusOK)
	_, err := png.Decode(img.Body)
	is.NoErr(err)

	// It was an ordinary task: charged, and the model got 16:9.
	is.Equal(o.credits(), int64(8))
	calls := o.model.Calls()
	is.Equal(calls[len(calls)-1].Request.AspectRatio, imagegen.Aspect16x9)
	is.Equal(calls[len(calls)-1].Request.Prompt, "A cute baby sea otter")
}

func TestOpenAIGenerationsB64(t *testing.T) {
	is := is.New(t)
	o := newOpenAIEnv(t, 1000)
	req := readOpenAI(t, "generations.request.gpt-image-1.json") // 1024x1024 and GPT-image options
	o.valid(t, "CreateImageRequest", req)
	var body map[string]any
	is.NoErr(json.Unmarshal(req, &body))
	body["response_format"] = "b64_json"
	b, err := json.Marshal(body)
	is.NoErr(err)
	w := o.generate(o.key, string(b))
	is.Equal(w.Code, http.StatusOK)
	o.valid(t, "ImagesResponse", w.Body.Bytes())
	var got httpapi.OpenAIImagesResponse
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &got))
	is.Equal(len(got.Data), 1)
	is.Equal(got.Data[0].URL, "")
	data, err := base64.StdEncoding.DecodeString(got.Data[0].B64JSON)
	is.NoErr(err)
	is.Equal(data, imagegentest.TinyPNG()) // the image itself
	calls := o.model.Calls()
	is.Equal(calls[0].Request.AspectRatio, imagegen.Aspect1x1)
}

func TestOpenAIAspectRatio(t *testing.T) {
	is := is.New(t)
	for size, want := range map[string]imagegen.AspectRatio{
		"": imagegen.AspectAuto, "auto": imagegen.AspectAuto, "256x256": imagegen.Aspect1x1, "1024x1024": imagegen.Aspect1x1,
		"1536x1024": imagegen.Aspect3x2, "1024x1536": imagegen.Aspect2x3, "1792x1024": imagegen.Aspect16x9,
		"1024x1792": imagegen.Aspect9x16, "1920x1080": imagegen.Aspect16x9, "1024x768": imagegen.Aspect4x3, "768x1024": imagegen.Aspect3x4,
	} {
		got, ok := httpapi.OpenAIAspectRatio(size)
		is.True(ok)
		is.Equal(got, want)
	}
	for _, size := range []string{"1000x700", "1024", "x", "0x0", "-1x-1", "1024x1024x2", "big", "99999x99999",
		"+3x+2", "+1024x+1024", "0512x512", "512x0512", " 512x512", "512x512 ", "9000x9000", "8193x8193", "1_024x1_024", "１０２４x１０２４"} {
		_, ok := httpapi.OpenAIAspectRatio(size)
		is.True(!ok) // refused
	}
}

func TestOpenAIErrors(t *testing.T) {
	is := is.New(t)
	o := newOpenAIEnv(t, 1000)
	gen := func(body string) *httptest.ResponseRecorder {
		return o.do("POST", "/v1/images/generations", o.key, body)
	}

	o.errorShape(t, gen(`{"prompt":"otter","size":"1000x700"}`), http.StatusBadRequest, "invalid_request_error", "size", "invalid_value")
	o.errorShape(t, gen(`{"prompt":"otter","n":2}`), http.StatusBadRequest, "invalid_request_error", "n", "invalid_value")
	o.errorShape(t, gen(`{"prompt":"otter","response_format":"png"}`), http.StatusBadRequest, "invalid_request_error", "response_format", "invalid_value")
	o.errorShape(t, gen(`{"prompt":"otter","stream":true}`), http.StatusBadRequest, "invalid_request_error", "stream", "invalid_value")
	o.errorShape(t, gen(`{"size":"1024x1024"}`), http.StatusBadRequest, "invalid_request_error", "prompt", "missing_required_parameter")
	o.errorShape(t, gen(`{"prompt":"otter","seed":1}`), http.StatusBadRequest, "invalid_request_error", "seed", "unknown_parameter")
	w0 := gen(`{"prompt":"otter","responseFormat":"url"}`)
	o.errorShape(t, w0, http.StatusBadRequest, "invalid_request_error", "responseFormat", "unknown_parameter")
	is.True(strings.Contains(w0.Body.String(), "did you mean response_format?"))
	o.errorShape(t, gen(`{"prompt":7}`), http.StatusBadRequest, "invalid_request_error", "prompt", "invalid_type")
	o.errorShape(t, gen(`{"prompt":"`+strings.Repeat("a", imagegen.MaxPromptChars+1)+`"}`), http.StatusBadRequest, "invalid_request_error", "prompt", "invalid_value")
	o.errorShape(t, gen(`[1]`), http.StatusBadRequest, "invalid_request_error", "", "invalid_json")
	// Bytes that are not UTF-8 are not JSON: refused, not read as U+FFFD
	// (a prompt other than the one sent, which the native API refuses too).
	o.errorShape(t, gen("{\"prompt\":\"ott\xffer\"}"), http.StatusBadRequest, "invalid_request_error", "", "invalid_json")
	// A body over the limit: 413, as on the native API.
	o.errorShape(t, gen(`{"prompt":"`+strings.Repeat("a", httpapi.MaxBodyBytes)+`"}`), http.StatusRequestEntityTooLarge, "invalid_request_error", "", "request_too_large")
	o.errorShape(t, o.do("POST", "/v1/images/generations", o.key, `{"prompt":"otter"}`, "Content-Type", "text/plain"), http.StatusBadRequest, "invalid_request_error", "", "invalid_value")

	// The shared middleware's answers, in OpenAI's shapes.
	o.errorShape(t, o.do("POST", "/v1/images/generations", "", `{"prompt":"otter"}`), http.StatusUnauthorized, "invalid_request_error", "", "invalid_api_key")
	o.errorShape(t, o.do("GET", "/v1/images/generations", o.key, ""), http.StatusMethodNotAllowed, "invalid_request_error", "", "method_not_allowed")
	o.errorShape(t, o.do("POST", "/v1/images/variations", o.key, ""), http.StatusNotFound, "invalid_request_error", "", "")

	// No credits: OpenAI's insufficient_quota, not to be retried.
	w := o.do("POST", "/v1/images/generations", o.user("bob", 0), `{"prompt":"otter"}`)
	o.errorShape(t, w, http.StatusTooManyRequests, "insufficient_quota", "", "insufficient_quota")
	is.Equal(w.Header().Get("X-Should-Retry"), "false")

	// A refusal is OpenAI's content_policy_violation, and refunded.
	o.model.Then(imagegentest.Fail(&imagegen.ModelError{Provider: "scripted", Refused: true, Message: "the prompt was blocked"}))
	w = o.generate(o.key, `{"prompt":"otter"}`)
	o.errorShape(t, w, http.StatusBadRequest, "invalid_request_error", "", "content_policy_violation")
	likeExample(t, w, "error.content_policy_violation.dall-e.json")
	is.Equal(o.credits(), int64(10)) // nothing was charged in the end
}

func TestOpenAIRateLimit(t *testing.T) {
	is := is.New(t)
	o := newOpenAIEnv(t, 1)
	is.Equal(o.do("GET", "/api/v1/credits", o.key, "").Code, http.StatusOK) // the one request of the minute
	w := o.do("POST", "/v1/images/generations", o.key, `{"prompt":"otter"}`)
	o.errorShape(t, w, http.StatusTooManyRequests, "requests", "", "rate_limit_exceeded")
	likeExample(t, w, "error.rate_limit.json")
	is.True(w.Header().Get("Retry-After") != "") // OpenAI SDKs wait for it
}

func TestOpenAITimeoutCancelsAndRefunds(t *testing.T) {
	is := is.New(t)
	o := newOpenAIEnv(t, 1000)
	done := startWaiting(t, o.clock, func() *httptest.ResponseRecorder { // no worker runs: it waits
		return o.do("POST", "/v1/images/generations", o.key, `{"prompt":"otter"}`)
	})
	o.clock.Advance(30 * time.Second)
	w := <-done
	o.errorShape(t, w, http.StatusGatewayTimeout, "server_error", "", "timeout")
	is.Equal(w.Header().Get("X-Should-Retry"), "false")
	is.Equal(o.credits(), int64(10)) // cancelled and refunded
	var list wire.TaskList
	is.NoErr(json.Unmarshal(o.do("GET", "/api/v1/tasks", o.key, "").Body.Bytes(), &list))
	is.Equal(len(list.Tasks), 1)
	is.Equal(list.Tasks[0].ErrorCode, imagegen.CodeCancelled)
}

// At shutdown (Drain) an open OpenAI request is answered at once with a
// 503 its SDK retries, and its task is cancelled and refunded, so that
// neither the shutdown nor the caller's credits wait on it.
func TestOpenAIDrainCancelsAndRefunds(t *testing.T) {
	is := is.New(t)
	o := newOpenAIEnv(t, 1000)
	done := startWaiting(t, o.clock, func() *httptest.ResponseRecorder { // no worker runs: it waits
		return o.do("POST", "/v1/images/generations", o.key, `{"prompt":"otter"}`)
	})
	o.api.Drain()
	var w *httptest.ResponseRecorder
	select {
	case w = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Drain did not end the OpenAI request's wait")
	}
	o.errorShape(t, w, http.StatusServiceUnavailable, "server_error", "", "server_shutting_down")
	is.Equal(w.Header().Get("Retry-After"), "1")
	is.Equal(o.credits(), int64(10)) // cancelled and refunded
}

func TestOpenAIEndpointOffByDefault(t *testing.T) {
	e := newEnv(t)
	w := e.do("POST", "/v1/images/generations", e.key, `{"prompt":"otter"}`)
	is.New(t).Equal(w.Code, http.StatusNotFound) // nothing mounted there
	is.New(t).True(!bytes.Contains(w.Body.Bytes(), []byte("created")))
}

// GET /v1/models lists the configured models in OpenAI's shape (SDKs
// call it), and GET /v1/models/{id} answers one of them or OpenAI's 404.
func TestOpenAIModels(t *testing.T) {
	is := is.New(t)
	o := newOpenAIEnv(t, 1000, func(c *httpapi.Config) { c.OpenAIModels = []string{"openai/gpt-image-1", "gemini"} })
	w := o.do("GET", "/v1/models", o.key, "")
	is.Equal(w.Code, http.StatusOK)
	o.valid(t, "ListModelsResponse", w.Body.Bytes())
	var list httpapi.OpenAIModelList
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &list))
	is.Equal(list.Object, "list")
	is.Equal(len(list.Data), 2)
	is.Equal(list.Data[0].ID, "openai/gpt-image-1")
	is.Equal(list.Data[1].ID, "gemini")
	is.Equal(list.Data[0].Object, "model")
	is.True(list.Data[0].OwnedBy != "")

	w = o.do("GET", "/v1/models/gemini", o.key, "")
	is.Equal(w.Code, http.StatusOK)
	o.valid(t, "Model", w.Body.Bytes())
	o.errorShape(t, o.do("GET", "/v1/models/dall-e-3", o.key, ""), http.StatusNotFound, "invalid_request_error", "model", "model_not_found")
	o.errorShape(t, o.do("GET", "/v1/models", "", ""), http.StatusUnauthorized, "invalid_request_error", "", "invalid_api_key")
	o.errorShape(t, o.do("POST", "/v1/models", o.key, ""), http.StatusMethodNotAllowed, "invalid_request_error", "", "method_not_allowed")

	// Without a list configured, the one default id.
	d := newOpenAIEnv(t, 1000)
	is.NoErr(json.Unmarshal(d.do("GET", "/v1/models", d.key, "").Body.Bytes(), &list))
	is.Equal(len(list.Data), 1)
	is.Equal(list.Data[0].ID, httpapi.DefaultOpenAIModel)
}

// Every other path under the prefix answers OpenAI's 404 in its error
// shape (as api.openai.com does), not a plain-text one.
func TestOpenAIUnknownPaths(t *testing.T) {
	o := newOpenAIEnv(t, 1000)
	for _, p := range []struct{ method, path string }{
		{"POST", "/v1/chat/completions"}, {"GET", "/v1/nope"}, {"GET", "/v1/"}, {"POST", "/v1/images/edits"},
	} {
		t.Run(p.method+" "+p.path, func(t *testing.T) {
			w := o.do(p.method, p.path, o.key, "")
			o.errorShape(t, w, http.StatusNotFound, "invalid_request_error", "", "")
			is.New(t).True(strings.Contains(w.Body.String(), p.path))
		})
	}
}
