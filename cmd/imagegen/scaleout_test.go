package main

import (
	"encoding/json"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
)

const demoKey = "scale-out-key-0123456789"

// httpCall sends one API request and decodes the JSON answer.
func httpCall(t *testing.T, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	code, m, _ := doRequest(t, method, url, key, body, "")
	return code, m
}

// longPoll GETs url with "Prefer: wait=60": the answer comes as soon as
// the task ends, or after a minute with the task as it stands.
func longPoll(t *testing.T, url, key string) (int, map[string]any) {
	t.Helper()
	is := is.New(t)
	req, err := http.NewRequest("GET", url, nil)
	is.NoErr(err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Prefer", "wait=60")
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	defer resp.Body.Close()
	var m map[string]any
	is.NoErr(json.NewDecoder(resp.Body).Decode(&m))
	return resp.StatusCode, m
}

// Two API processes and one worker process share one Redis: a task
// submitted through one is finished by the worker and polled to success
// through the other, and the key's limit of 10 requests a minute holds
// across both API processes.
func TestScaleOutTwoServesOneWorker(t *testing.T) {
	is := is.New(t)
	r := startRedis(t)
	common := []string{"-redis", r.url(), "-demo-key", demoKey, "-demo-credits", "5", "-rate-limit", "10"}
	_, a := startServeProcess(t, append(common, "-workers", "0")...)
	_, b := startServeProcess(t, append(common, "-workers", "0")...)
	w := startImagegen(t, "worker", "-redis", r.url(), "-placeholder-delay", "0", "-workers", "2")

	requests := 0
	code, sub := httpCall(t, "POST", a+"/api/v1/generate", demoKey, `{"scene":"text-to-image","prompt":"a lighthouse","aspect_ratio":"16:9"}`)
	requests++
	is.Equal(code, http.StatusCreated)
	is.Equal(sub["credits_remaining"], 4.0) // 5 granted once, though both processes started with -demo-credits
	id := sub["task_id"].(string)

	// The worker is another process: each poll waits for the task to end
	// (Prefer: wait), however long the worker takes to start.
	var task map[string]any
	for range 3 {
		code, task = longPoll(t, b+"/api/v1/tasks/"+id, demoKey)
		requests++
		is.Equal(code, http.StatusOK)
		if task["status"] == "success" {
			break
		}
	}
	is.Equal(task["status"], "success") // polled through the other API process
	images := task["images"].([]any)
	is.Equal(len(images), 1)

	// The image URL is signed by a key both API processes share.
	url := images[0].(string)
	for _, base := range []string{a, b} {
		resp, err := http.Get(base + url[strings.Index(url, "/api/v1/"):])
		is.NoErr(err)
		img, err := png.Decode(resp.Body)
		resp.Body.Close()
		is.NoErr(err)
		is.Equal(img.Bounds().Dx()*9, img.Bounds().Dy()*16) // 16:9
	}

	// One limit across both processes: 10 requests in the minute, then 429 on either.
	for ; requests < 10; requests++ {
		code, _ := httpCall(t, "GET", []string{a, b}[requests%2]+"/api/v1/tasks/"+id, demoKey, "")
		is.Equal(code, http.StatusOK)
	}
	for _, base := range []string{a, b} {
		code, body := httpCall(t, "GET", base+"/api/v1/tasks/"+id, demoKey, "")
		is.Equal(code, http.StatusTooManyRequests)
		is.Equal(body["error"].(map[string]any)["code"], "rate_limit_exceeded")
	}
	w.stop(t)
}
