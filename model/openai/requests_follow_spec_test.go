package openai_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/openai"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// Every fake checks every request against the OpenAPI subset and fails
// its test on a violation; this test drives each kind of request the
// adapter makes through one fake, and shows that the check does reject
// requests that break the spec.
func TestRequestsFollowTheSpec(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	fetcher := &providertest.Fetcher{Images: map[string]providertest.Image{
		"https://img.example/a.png": {Data: providertest.PNG(64, 64)},
		"https://img.example/b.jpg": {Data: providertest.JPEG(64, 48)},
		"https://img.example/c.png": {Data: providertest.PNG(48, 64)},
	}}
	configs := []openai.Config{
		{Fetcher: fetcher},
		{Fetcher: fetcher, Quality: "low", Organization: "org-1"},
		{Model: "gpt-image-1-mini", Fetcher: fetcher},
		{Model: "dall-e-3"},
		{Model: "dall-e-3", Quality: "standard"},
	}
	sent := 0
	for _, c := range configs {
		m, _ := newModel(t, f, c)
		_, err := providertest.Generate(context.Background(), m, providertest.T2I("a lighthouse at dusk", imagegen.Aspect3x2))
		is.NoErr(err)
		sent++
		if c.Model != "dall-e-3" {
			_, err = providertest.Generate(context.Background(), m, providertest.I2I("the three together", imagegen.AspectAuto, "https://img.example/a.png", "https://img.example/b.jpg", "https://img.example/c.png"))
			is.NoErr(err)
			sent++
		}
	}
	is.Equal(f.spec.count(), sent) // every request was checked (and none broke the spec: see newFake)

	bad := func(path, contentType string, body []byte) error {
		r := httptest.NewRequest(http.MethodPost, f.baseURL()+path, bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("Content-Type", contentType)
		return f.spec.check(r, body)
	}
	is.True(bad("/images/generations", "application/json", []byte(`{"model":"gpt-image-1","n":1}`)) != nil)               // no prompt
	is.True(bad("/images/generations", "application/json", []byte(`{"model":"gpt-image-1","prompt":"x","n":11}`)) != nil) // n > 10
	is.True(bad("/images/generations", "application/json", []byte(`{"prompt":"x","quality":"ultra"}`)) != nil)            // not an enum value
	is.True(bad("/images/generations", "application/json", []byte(`{"prompt":"x","output_format":"gif"}`)) != nil)        // not an enum value
	is.True(bad("/images/variations", "application/json", []byte(`{"prompt":"x"}`)) != nil)                               // multipart only
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("prompt", "x")
	_ = w.WriteField("n", "11")
	_ = w.Close()
	is.True(bad("/images/edits", w.FormDataContentType(), buf.Bytes()) != nil) // no image, n > 10
	is.NoErr(bad("/images/generations", "application/json", []byte(`{"model":"gpt-image-1","prompt":"x","n":1,"size":"1024x1024"}`)))
}
