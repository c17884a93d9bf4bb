package gemini_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

const (
	key       = "AIzaSyTESTKEY-0123456789abcdefghijklmn"
	modelPath = "/v1beta/models/gemini-2.5-flash-image:generateContent"
)

// answer is a scripted answer the fake serves before it succeeds.
type answer = providertest.Answer

// wireRequest is GenerateContentRequest as the protos name it (proto3
// JSON), decoded strictly: an unknown field is a 400, as the API does.
type wireRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text       *string `json:"text"`
			InlineData *struct {
				MimeType string `json:"mimeType"`
				Data     string `json:"data"`
			} `json:"inlineData"`
		} `json:"parts"`
	} `json:"contents"`
	GenerationConfig *struct {
		ResponseModalities []string `json:"responseModalities"`
		ImageConfig        *struct {
			AspectRatio *string `json:"aspectRatio"`
			ImageSize   *string `json:"imageSize"`
		} `json:"imageConfig"`
	} `json:"generationConfig"`
}

// call is one request the fake received.
type call struct {
	path   string
	header http.Header
	raw    []byte
	req    wireRequest
}

// aspectRatio is the ratio sent, or "" when none was.
func (c call) aspectRatio() string {
	if gc := c.req.GenerationConfig; gc != nil && gc.ImageConfig != nil && gc.ImageConfig.AspectRatio != nil {
		return *gc.ImageConfig.AspectRatio
	}
	return ""
}

// answerSize is gemini-2.5-flash-image's answer for an aspect ratio
// (1K), and whether the API takes that ratio.
func answerSize(ratio string) (provider.Size, bool) {
	s, ok := map[string]provider.Size{
		"1:1": {W: 1024, H: 1024}, "2:3": {W: 832, H: 1248}, "3:2": {W: 1248, H: 832},
		"3:4": {W: 864, H: 1184}, "4:3": {W: 1184, H: 864}, "4:5": {W: 896, H: 1152},
		"5:4": {W: 1152, H: 896}, "9:16": {W: 768, H: 1344}, "16:9": {W: 1344, H: 768}, "21:9": {W: 1536, H: 672},
	}[ratio]
	return s, ok
}

// fake is the Gemini API on 127.0.0.1, following Google's interface
// definition of generateContent (testdata/README.md names it): it
// checks the path, the key header and the body (field names as the
// protos and examples have them, enum values), serves scripted answers,
// then answers like testdata/response.image.json with a PNG of the
// model's size for the ratio asked (or, with no ratio, the first
// reference's).
type fake struct {
	providertest.FakeAPI[call]
	ignoreRatio bool // answer 1024x1024 whatever was asked
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{}
	f.Start(t, f.serve)
	return f
}

func (f *fake) baseURL() string { return f.Server.URL + "/v1beta" }

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := call{path: r.URL.Path, header: r.Header.Clone(), raw: raw}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	decodeErr := dec.Decode(&c.req)
	next, scripted := f.Record("generate", c)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	switch {
	case r.Method != http.MethodPost || r.URL.Path != modelPath:
		f.T.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"code":404,"message":"models/x is not found for API version v1beta","status":"NOT_FOUND"}}`)
		return
	case r.Header.Get("x-goog-api-key") != key:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(f.badKeyBody(r.Header.Get("x-goog-api-key")))
		return
	case decodeErr != nil:
		f.T.Errorf("request body does not follow the protos: %v", decodeErr)
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(f.Examples.Get("error.400.invalid-argument.json"))
		return
	}
	if err := checkRequest(c.req); err != nil {
		f.T.Errorf("request breaks the wire spec: %v", err)
	}
	if scripted {
		next.Serve(w, r)
		return
	}
	_, _ = w.Write(f.success(c))
}

// badKeyBody is the 400 of a bad key: the shape of
// testdata/error.400.invalid-argument.json with the google.rpc.ErrorInfo
// Google's API errors carry. It echoes the key, to check that it is
// redacted.
func (f *fake) badKeyBody(got string) []byte {
	return providertest.EditJSON(f.T, f.Examples.Get("error.400.invalid-argument.json"), func(body map[string]any) {
		e := body["error"].(map[string]any)
		e["message"] = "API key not valid. Please pass a valid API key. (got " + got + ")"
		e["details"] = []any{map[string]any{
			"@type":    "type.googleapis.com/google.rpc.ErrorInfo",
			"reason":   "API_KEY_INVALID",
			"domain":   "googleapis.com",
			"metadata": map[string]any{"service": "generativelanguage.googleapis.com"},
		}}
	})
}

// success is testdata/response.image.json with its image replaced.
func (f *fake) success(c call) []byte {
	s := provider.Size{W: 1024, H: 1024}
	if r := c.aspectRatio(); r != "" {
		s, _ = answerSize(r)
	} else if parts := c.req.Contents[0].Parts; len(parts) > 1 && parts[1].InlineData != nil {
		data, _ := base64.StdEncoding.DecodeString(parts[1].InlineData.Data)
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
			s, _ = answerSize(string(imagegen.NearestAspectRatio(cfg.Width, cfg.Height))) // follows the first reference
		}
	}
	if f.ignoreRatio {
		s = provider.Size{W: 1024, H: 1024}
	}
	return withImage(f.T, f.Examples.Get("response.image.json"), f.PNGs.Of(s))
}

// withImage is an answer body with the data of its inlineData part set.
func withImage(t *testing.T, body, png []byte) []byte {
	return providertest.EditJSON(t, body, func(resp map[string]any) {
		for _, p := range resp["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any) {
			if in, ok := p.(map[string]any)["inlineData"].(map[string]any); ok {
				in["data"] = base64.StdEncoding.EncodeToString(png)
			}
		}
	})
}

// checkRequest checks the values the API documents.
func checkRequest(r wireRequest) error {
	if len(r.Contents) != 1 || r.Contents[0].Role != "user" || len(r.Contents[0].Parts) == 0 {
		return fmt.Errorf("want one user content with parts")
	}
	for i, p := range r.Contents[0].Parts {
		switch {
		case p.Text != nil && p.InlineData == nil:
		case p.InlineData != nil && p.Text == nil:
			if !slices.Contains([]string{"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"}, p.InlineData.MimeType) {
				return fmt.Errorf("parts[%d].inlineData.mimeType %q", i, p.InlineData.MimeType)
			}
			if _, err := base64.StdEncoding.DecodeString(p.InlineData.Data); err != nil {
				return fmt.Errorf("parts[%d].inlineData.data is not standard base64: %w", i, err)
			}
		default:
			return fmt.Errorf("parts[%d] must hold text or inlineData", i)
		}
	}
	gc := r.GenerationConfig
	if gc == nil || !slices.Contains(gc.ResponseModalities, "IMAGE") {
		return fmt.Errorf("generationConfig.responseModalities must include IMAGE")
	}
	for _, m := range gc.ResponseModalities {
		if m != "TEXT" && m != "IMAGE" {
			return fmt.Errorf("responseModalities %q", m)
		}
	}
	if ic := gc.ImageConfig; ic != nil {
		if ic.AspectRatio != nil {
			if _, ok := answerSize(*ic.AspectRatio); !ok {
				return fmt.Errorf("imageConfig.aspectRatio %q", *ic.AspectRatio)
			}
		}
		if ic.ImageSize != nil && !slices.Contains([]string{"1K", "2K", "4K"}, *ic.ImageSize) {
			return fmt.Errorf("imageConfig.imageSize %q", *ic.ImageSize)
		}
	}
	return nil
}

// set changes one value of a decoded JSON document at a dotted path
// (numbers index arrays).
func set(doc any, path string, value any) {
	keys := strings.Split(path, ".")
	cur := doc
	for i, k := range keys {
		last := i == len(keys)-1
		switch node := cur.(type) {
		case map[string]any:
			if last {
				node[k] = value
				return
			}
			cur = node[k]
		case []any:
			var n int
			fmt.Sscan(k, &n)
			if last {
				node[n] = value
				return
			}
			cur = node[n]
		}
	}
}
