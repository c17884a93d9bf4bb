package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestServeOpenAIEndpoint: what `curl` of /v1/images/generations with a
// demo key gets from `imagegen serve`: OpenAI's answer, whose URL serves
// a PNG, and the credits charged.
func TestServeOpenAIEndpoint(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-demo-key", cliKey, "-demo-credits", "5", "-rate-limit", "1000")
	req, err := http.NewRequest("POST", s.base+"/v1/images/generations", strings.NewReader(`{"prompt":"a red fox","size":"1024x1024"}`))
	is.NoErr(err)
	req.Header.Set("Authorization", "Bearer "+cliKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	defer res.Body.Close()
	is.Equal(res.StatusCode, http.StatusOK)
	var body struct {
		Created int64 `json:"created"`
		Data    []struct {
			URL string `json:"url"`
		} `json:"data"`
	}
	is.NoErr(json.NewDecoder(res.Body).Decode(&body))
	is.True(body.Created > 0)
	is.Equal(len(body.Data), 1)
	is.True(strings.HasPrefix(body.Data[0].URL, s.base+"/api/v1/images/"))

	img, err := http.Get(body.Data[0].URL) // no key needed
	is.NoErr(err)
	defer img.Body.Close()
	is.Equal(img.StatusCode, http.StatusOK)
	is.Equal(img.Header.Get("Content-Type"), "image/png")
	pic, err := png.Decode(img.Body)
	is.NoErr(err)
	is.Equal(pic.Bounds().Dx(), pic.Bounds().Dy()) // 1024x1024: square

	status, credits := s.call(t, "GET", "/api/v1/credits", cliKey, "")
	is.Equal(status, http.StatusOK)
	is.Equal(credits["credits_remaining"], float64(4)) // charged like any task

	// OpenAI SDKs list the models first: -model's, in OpenAI's shape.
	status, models := s.call(t, "GET", "/v1/models", cliKey, "")
	is.Equal(status, http.StatusOK)
	is.Equal(models["object"], "list")
	data, _ := models["data"].([]any)
	is.Equal(len(data), 1)
	is.Equal(data[0].(map[string]any)["id"], "placeholder")
	status, missing := s.call(t, "GET", "/v1/embeddings", cliKey, "")
	is.Equal(status, http.StatusNotFound)
	is.Equal(missing["error"].(map[string]any)["type"], "invalid_request_error") // OpenAI's shape

	// -openai-prefix "" turns it off.
	off := startServe(t, nil, "-demo-key", cliKey, "-openai-prefix", "")
	res2, err := http.Post(off.base+"/v1/images/generations", "application/json", bytes.NewReader([]byte(`{"prompt":"x"}`)))
	is.NoErr(err)
	res2.Body.Close()
	is.Equal(res2.StatusCode, http.StatusNotFound)
}
