// Command pollclient submits a generation task and polls it until it
// ends, as a client of the HTTP API should: it waits between polls,
// honours 429 Retry-After, and stops on success or failed.
//
//	IMAGEGEN_API_KEY=... go run ./examples/pollclient -prompt "a red fox"
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	server := flag.String("server", "http://127.0.0.1:8080", "base URL of the imagegen server")
	prompt := flag.String("prompt", "a lighthouse at dusk", "what to draw")
	aspect := flag.String("aspect", "auto", "aspect ratio")
	flag.Parse()
	c := &client{base: *server + "/api/v1", key: os.Getenv("IMAGEGEN_API_KEY"), http: http.DefaultClient, sleep: sleep, every: 5 * time.Second}
	task, err := c.generate(context.Background(), request{Scene: "text-to-image", Prompt: *prompt, AspectRatio: *aspect})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	if task.Status == "failed" {
		fmt.Fprintln(os.Stderr, "task failed:", task.Error)
		os.Exit(1)
	}
	for _, u := range task.Images {
		fmt.Println(u)
	}
}

type request struct {
	Scene       string   `json:"scene"`
	Prompt      string   `json:"prompt"`
	AspectRatio string   `json:"aspect_ratio,omitempty"`
	ImageInput  []string `json:"image_input,omitempty"`
}

type task struct {
	TaskID string   `json:"task_id"`
	Status string   `json:"status"`
	Images []string `json:"images"`
	Error  string   `json:"error"`
}

type apiError struct {
	Status int
	Error  struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type client struct {
	base, key string
	http      *http.Client
	sleep     func(ctx context.Context, d time.Duration) error
	every     time.Duration // between polls
}

// generate submits req and polls until the task ends.
func (c *client) generate(ctx context.Context, req request) (task, error) {
	body, _ := json.Marshal(req)
	var t task
	if err := c.call(ctx, "POST", "/generate", body, &t); err != nil {
		return t, err
	}
	for t.Status == "pending" || t.Status == "processing" {
		if err := c.sleep(ctx, c.every); err != nil {
			return t, err
		}
		if err := c.call(ctx, "GET", "/tasks/"+t.TaskID, nil, &t); err != nil {
			return t, err
		}
	}
	return t, nil
}

// call does one request, waiting out 429s as Retry-After asks.
func (c *client) call(ctx context.Context, method, path string, body []byte, out any) error {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+c.key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusTooManyRequests && attempt < 5 {
			wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if err != nil || wait < 1 {
				wait = 1
			}
			if err := c.sleep(ctx, time.Duration(wait)*time.Second); err != nil {
				return err
			}
			continue
		}
		if resp.StatusCode >= 300 {
			e := apiError{Status: resp.StatusCode}
			_ = json.Unmarshal(data, &e)
			return fmt.Errorf("%d %s: %s", e.Status, e.Error.Code, e.Error.Message)
		}
		return json.Unmarshal(data, out)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
