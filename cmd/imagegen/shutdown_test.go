package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/internal/testenv"
)

// TestServeShutdownAnswersOpenWaits: SIGTERM while a "Prefer: wait"
// request is open (serve has logged its start) answers it at once with
// the task as it stands (200) and serve exits 0, instead of holding the
// wait to the end of the 30 s shutdown grace and exiting 1.
func TestServeShutdownAnswersOpenWaits(t *testing.T) {
	is := is.New(t)
	const key = "shutdown-demo-key-0123456789"
	// The placeholder takes an hour: the task stays processing.
	p, base := startServeProcess(t, "-demo-key", key, "-placeholder-delay", "1h", "-shutdown-timeout", "1s", "-log-level", "debug")
	req, err := http.NewRequest("POST", base+"/api/v1/generate", strings.NewReader(`{"scene":"text-to-image","prompt":"a fox"}`))
	is.NoErr(err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	var created struct {
		TaskID string `json:"task_id"`
	}
	is.NoErr(json.NewDecoder(resp.Body).Decode(&created))
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusCreated)

	type answer struct {
		status int
		body   map[string]any
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("GET", base+"/api/v1/tasks/"+created.TaskID, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Prefer", "wait=60")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var m map[string]any
		err = json.NewDecoder(resp.Body).Decode(&m)
		answered <- answer{status: resp.StatusCode, body: m, err: err}
	}()
	testenv.Eventually(t, 20*time.Second, "the wait begins", func() bool {
		return strings.Contains(p.Output(), "waiting for the task to end")
	})

	// Held to the end of the 30 s grace, the wait would get no answer
	// (its connection closed) and serve would exit 1: the bounds below
	// only stop a hung test.
	p.signal(syscall.SIGTERM)
	select {
	case a := <-answered:
		is.NoErr(a.err)
		is.Equal(a.status, http.StatusOK)
		is.True(a.body["status"] == "processing" || a.body["status"] == "pending")
	case <-time.After(time.Minute):
		t.Fatal("the open wait was not answered within a minute of SIGTERM")
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("serve did not exit within a minute of SIGTERM:\n%s", p.Output())
	}
	err = p.cmd.Wait()
	is.NoErr(err) // exit status 0
}

// TestServeWritesBufferedLogLinesOnSIGTERM: request log lines wait in
// memory (here for up to an hour, -log-flush 1h), and SIGTERM still
// writes every one of them before serve exits.
func TestServeWritesBufferedLogLinesOnSIGTERM(t *testing.T) {
	is := is.New(t)
	const key = "logflush-demo-key-0123456789"
	p, base := startServeProcess(t, "-demo-key", key, "-workers", "0", "-rate-limit", "1000", "-log-flush", "1h")
	const requests = 50
	for i := range requests {
		req, err := http.NewRequest("GET", base+"/api/v1/tasks/no-such-task-"+strconv.Itoa(i), nil)
		is.NoErr(err)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		is.NoErr(err)
		resp.Body.Close()
		is.Equal(resp.StatusCode, http.StatusNotFound)
	}
	is.Equal(strings.Count(p.Output(), "msg=request"), 0) // still in memory: the hour has not passed
	p.stop(t)
	out := p.Output()
	is.Equal(strings.Count(out, "msg=request"), requests)
	is.Equal(strings.Count(out, `method=GET route=/api/v1/tasks/{task_id} status=404`), requests)
	is.True(strings.Contains(out, "msg=stopped")) // the last line, written after the buffer was let go
}
