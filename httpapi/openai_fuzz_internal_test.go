package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/imagegen/imagegen"
)

// FuzzDecodeOpenAIRequest checks how the OpenAI-compatible endpoint reads
// a body it is sent (decodeOpenAIRequest): it never panics; what it
// refuses is a 400 invalid_request_error in OpenAI's shape, which
// encodes as JSON; what it accepts is a text-to-image request that
// passes Request.Validate (so Submit cannot refuse it for its shape),
// with the body's prompt, an aspect ratio the service knows and a
// response format of url or b64_json.
func FuzzDecodeOpenAIRequest(f *testing.F) {
	for _, b := range []string{
		`{"prompt":"a lighthouse"}`, `{"prompt":"a","n":1,"size":"1024x1792","response_format":"b64_json"}`,
		`{"prompt":"a","size":"4096x3072"}`, `{"prompt":"a","size":"+3x+2"}`, `{"prompt":"a","size":"0x0"}`,
		`{"prompt":"a","n":2}`, `{"prompt":"a","n":1.5}`, `{"prompt":"a","stream":true}`, `{"prompt":"\u0000"}`,
		`{"prompt":"a","model":"dall-e-3","quality":"hd","style":"vivid","user":"u"}`, `{"prompt":"a","Prompt":"b"}`,
		`{"prompt":"a","prompt":""}`, `{"prompt":null}`, `{"prompt":"\ud800"}`, `{"prompt":" \u200b "}`, `[]`, `null`, `{}`, `{"prompt":"a","size":null}`,
		`{"prompt":"a","n":-9223372036854775808}`, `{"prompt":"a","siz":"1"}`,
	} {
		f.Add(b, "application/json")
	}
	f.Add(`{"prompt":"a"}`, "text/plain")
	f.Add(`{"prompt":"a"}`, "application/json; charset=utf-8")
	f.Fuzz(func(t *testing.T, body, contentType string) {
		r := httptest.NewRequest(http.MethodPost, "/v1/images/generations", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		req, format, oerr := decodeOpenAIRequest(w, r)
		if oerr != nil {
			if oerr.status != http.StatusBadRequest || oerr.Error.Type != "invalid_request_error" || oerr.Error.Message == "" {
				t.Fatalf("%q refused with %d %+v", body, oerr.status, oerr.Error)
			}
			if _, err := json.Marshal(oerr); err != nil {
				t.Fatalf("%q: the error does not encode: %v", body, err)
			}
			return
		}
		if err := req.Validate(); err != nil {
			t.Fatalf("%q accepted as %+v, which Validate refuses: %v", body, req, err)
		}
		if req.Scene != imagegen.SceneTextToImage || !req.AspectRatio.Valid() || (format != "url" && format != "b64_json") {
			t.Fatalf("%q accepted as %+v, format %q", body, req, format)
		}
		var in struct {
			Prompt string `json:"prompt"`
		}
		if err := json.Unmarshal([]byte(body), &in); err != nil || in.Prompt != req.Prompt {
			t.Fatalf("%q accepted with prompt %q; the body's is %q (%v)", body, req.Prompt, in.Prompt, err)
		}
	})
}
