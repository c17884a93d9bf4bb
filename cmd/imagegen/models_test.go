package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

func TestParseModels(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []modelChoice
		err  string
	}{
		{spec: "placeholder", want: []modelChoice{{provider: "placeholder"}}},
		{spec: "openai", want: []modelChoice{{provider: "openai"}}},
		{spec: "gemini/gemini-3-pro-image-preview=3", want: []modelChoice{{provider: "gemini", model: "gemini-3-pro-image-preview", cost: 3}}},
		{spec: " openai/dall-e-3 , gemini=1 ", want: []modelChoice{{provider: "openai", model: "dall-e-3"}, {provider: "gemini", cost: 1}}},
		{spec: "", err: "names no model"},
		{spec: " , ", err: "names no model"},
		{spec: "midjourney", err: `unknown provider "midjourney"`},
		{spec: "openai=4", err: "cost after = must be 1 to 3"},
		{spec: "openai=0", err: "cost after = must be 1 to 3"},
		{spec: "openai=two", err: "cost after = must be 1 to 3"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			is := is.New(t)
			got, err := parseModels(tc.spec)
			if tc.err != "" {
				is.True(err != nil && strings.Contains(err.Error(), tc.err))
				return
			}
			is.NoErr(err)
			is.Equal(got, tc.want)
		})
	}
}

func TestBuildModelNeedsTheProvidersKey(t *testing.T) {
	for provider, keyVar := range map[string]string{
		"openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY", "fal": "FAL_KEY", "replicate": "REPLICATE_API_TOKEN", "stability": "STABILITY_API_KEY", "bfl": "BFL_API_KEY",
	} {
		t.Run(provider, func(t *testing.T) {
			is := is.New(t)
			_, err := newModel(provider, modelDeps{getenv: noEnv})
			is.True(err != nil && strings.Contains(err.Error(), keyVar)) // says where the key goes
			env := func(k string) string { return map[string]string{keyVar: "secret-key"}[k] }
			m, err := newModel(provider, modelDeps{getenv: env, fetcher: &fetch.Fetcher{}})
			is.NoErr(err)
			is.True(m != nil)
		})
	}
	_, err := newModel("placeholder/big", modelDeps{getenv: noEnv})
	is.New(t).True(err != nil && strings.Contains(err.Error(), "no model names"))
}

// TestServeWithProviderFallback runs serve with -model openai=3,gemini
// against fakes of both: OpenAI refuses the key (an operator error, not
// retried) or is unavailable (503, retried, then given up), so the chain
// moves on to Gemini, whose picture the task returns, at the chain's
// price, charged once; neither key is ever logged.
func TestServeWithProviderFallback(t *testing.T) {
	for _, tc := range []struct {
		name        string
		status      int
		body        string
		openaiCalls int32
	}{
		{"bad key", http.StatusUnauthorized, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, 1},
		{"unavailable", http.StatusServiceUnavailable, `{"error":{"message":"The server is overloaded","type":"server_error","param":null,"code":null}}`, 4}, // 1 + 3 retries
	} {
		t.Run(tc.name, func(t *testing.T) {
			testFallback(t, tc.status, tc.body, tc.openaiCalls)
		})
	}
}

func testFallback(t *testing.T, status int, body string, wantOpenAICalls int32) {
	is := is.New(t)
	const openaiKey, geminiKey = "sk-test-openai-secret", "gemini-test-secret"
	var openaiCalls, geminiCalls atomic.Int32
	openaiFake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		openaiCalls.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+openaiKey || r.URL.Path != "/images/generations" {
			t.Errorf("openai got %s %s", r.Method, r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("retry-after-ms", "1") // keep the retries quick
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	defer openaiFake.Close()
	picture := base64.StdEncoding.EncodeToString(providertest.PNG(1024, 576))
	geminiFake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		geminiCalls.Add(1)
		if r.Header.Get("x-goog-api-key") != geminiKey || !strings.HasSuffix(r.URL.Path, ":generateContent") {
			t.Errorf("gemini got %s %s", r.Method, r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"inlineData":{"mimeType":"image/png","data":%q}}]},"finishReason":"STOP"}]}`, picture)
	}))
	defer geminiFake.Close()

	const key = "test-demo-key-0123456789"
	s := startServe(t, map[string]string{
		"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": openaiFake.URL,
		"GEMINI_API_KEY": geminiKey, "GEMINI_BASE_URL": geminiFake.URL,
		"IMAGEGEN_MODEL": "openai=3,gemini",
	}, "-demo-key", key, "-demo-credits", "5", "-rate-limit", "1000")

	code, sub := s.call(t, "POST", "/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a red fox","aspect_ratio":"16:9"}`)
	is.Equal(code, http.StatusCreated)
	is.Equal(sub["credits_remaining"], 2.0) // the chain's price: its first model's, 3
	task := s.waitTask(t, key, sub["task_id"].(string))
	is.Equal(task["status"], "success")
	is.Equal(openaiCalls.Load(), wantOpenAICalls)
	is.Equal(geminiCalls.Load(), int32(1))
	_, credits := s.call(t, "GET", "/api/v1/credits", key, "")
	is.Equal(credits["credits_remaining"], 2.0) // charged once, no refund

	is.NoErr(s.stop())
	for _, out := range []string{s.stderr.String(), s.stdout.String()} {
		is.True(!strings.Contains(out, openaiKey))
		is.True(!strings.Contains(out, geminiKey))
	}
	is.True(strings.Contains(s.stderr.String(), `model="openai=3,gemini"`)) // the log names the chain
}
