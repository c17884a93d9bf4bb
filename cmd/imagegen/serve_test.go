package main

import (
	"context"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/matryer/is"
)

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test.
type syncBuffer = testenv.SyncBuffer

type serveProc struct {
	base           string
	stdout, stderr *syncBuffer
	stop           func() error
}

// startServe runs `imagegen serve` on a free loopback port.
func startServe(t *testing.T, env map[string]string, args ...string) serveProc {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	args = append([]string{"serve", "-addr", "127.0.0.1:0"}, args...)
	go func() { done <- run(ctx, args, func(k string) string { return env[k] }, stdout, stderr) }()
	addrRe := regexp.MustCompile(`"?api"?[=:]"?(http://127\.0\.0\.1:\d+)/api/v1`) // text or JSON logs
	t.Cleanup(func() { cancel() })
	var base string
	testenv.EventuallyNoError(t, 10*time.Second, "serve to start", func() error {
		if m := addrRe.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
			return nil
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, stderr)
		default:
		}
		return fmt.Errorf("no API address logged; its log:\n%s", stderr)
	})
	s := serveProc{base: base, stdout: stdout, stderr: stderr}
	s.stop = func() error { cancel(); return <-done }
	return s
}

func (s serveProc) call(t *testing.T, method, path, key, body string) (int, map[string]any) {
	t.Helper()
	return httpCall(t, method, s.base+path, key, body)
}

// waitTask long-polls (Prefer: wait) until the task ends, however long
// the worker takes, with a request a minute at most.
func (s serveProc) waitTask(t *testing.T, key, id string) map[string]any {
	t.Helper()
	for range 3 {
		code, m := longPoll(t, s.base+"/api/v1/tasks/"+id, key)
		is.New(t).Equal(code, http.StatusOK)
		if m["status"] == "success" || m["status"] == "failed" {
			return m
		}
	}
	t.Fatal("task did not finish within 3 minutes")
	return nil
}

func TestServeEndToEnd(t *testing.T) {
	is := is.New(t)
	const key = "test-demo-key-0123456789"
	s := startServe(t, map[string]string{"IMAGEGEN_PLACEHOLDER_DELAY": "10ms"},
		"-demo-key", key, "-demo-credits", "5", "-rate-limit", "1000")

	code, sub := s.call(t, "POST", "/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a red fox","aspect_ratio":"16:9"}`)
	is.Equal(code, http.StatusCreated)
	is.Equal(sub["credits_remaining"], 4.0)
	task := s.waitTask(t, key, sub["task_id"].(string))
	is.Equal(task["status"], "success")
	url := task["images"].([]any)[0].(string)
	is.True(strings.HasPrefix(url, s.base+"/api/v1/images/"))
	resp, err := http.Get(url) // no key needed
	is.NoErr(err)
	defer resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusOK)
	img, err := png.Decode(resp.Body)
	is.NoErr(err)
	is.Equal(img.Bounds().Dx(), 1024) // 16:9 at the default long side
	is.Equal(img.Bounds().Dy(), 576)

	// A refused prompt fails and is refunded.
	code, sub = s.call(t, "POST", "/api/v1/generate", key, `{"scene":"text-to-image","prompt":"NSFW stuff"}`)
	is.Equal(code, http.StatusCreated)
	is.Equal(sub["credits_remaining"], 3.0)
	task = s.waitTask(t, key, sub["task_id"].(string))
	is.Equal(task["status"], "failed")
	is.True(strings.Contains(task["error"].(string), "content policy"))
	_, sub = s.call(t, "POST", "/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a cat"}`)
	is.Equal(sub["credits_remaining"], 3.0) // 4 after the refund, minus 1

	is.NoErr(s.stop())                                 // graceful shutdown returns cleanly
	is.True(!strings.Contains(s.stderr.String(), key)) // the key is never logged
	is.True(!strings.Contains(s.stdout.String(), key))
}

func TestServePrintsAGeneratedKeyOnce(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-placeholder-delay", "0s")
	key := regexp.MustCompile(`igk_[0-9A-Za-z]{38}`).FindString(s.stdout.String())
	is.True(key != "")
	code, sub := s.call(t, "POST", "/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a cat"}`)
	is.Equal(code, http.StatusCreated)
	is.Equal(sub["credits_remaining"], 99.0) // -demo-credits default 100
	is.NoErr(s.stop())
	is.True(!strings.Contains(s.stderr.String(), key))
}

// A generated key is printed only once nothing can fail before serving:
// with the admin address taken, serve exits with the error and no key.
func TestServePrintsNoKeyWhenItCannotServe(t *testing.T) {
	is := is.New(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	defer taken.Close()
	var stdout, stderr syncBuffer
	err = run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-admin-addr", taken.Addr().String()}, func(string) string { return "" }, &stdout, &stderr)
	is.True(err != nil && strings.Contains(err.Error(), "admin"))
	is.Equal(stdout.String(), "") // no key for a server that never served
}

func TestServeRateLimitFromEnv(t *testing.T) {
	is := is.New(t)
	const key = "another-demo-key-0123456789"
	s := startServe(t, map[string]string{"IMAGEGEN_RATE_LIMIT": "2", "IMAGEGEN_DEMO_KEY": key})
	for i := 0; i < 2; i++ {
		code, _ := s.call(t, "GET", "/api/v1/tasks/x", key, "")
		is.Equal(code, http.StatusNotFound)
	}
	code, m := s.call(t, "GET", "/api/v1/tasks/x", key, "")
	is.Equal(code, http.StatusTooManyRequests)
	is.Equal(m["error"].(map[string]any)["code"], "rate_limit_exceeded")
	is.NoErr(s.stop())
}

func TestParseServe(t *testing.T) {
	is := is.New(t)
	env := map[string]string{"IMAGEGEN_WORKERS": "7", "IMAGEGEN_DEMO_KEY": "a-key-of-sixteen-chars,b-key-of-sixteen-chars", "IMAGEGEN_RETENTION": "1h"}
	c, err := parseServe([]string{"-workers", "2"}, func(k string) string { return env[k] }, io.Discard)
	is.NoErr(err)
	is.Equal(c.workers, 2) // the flag wins over the env
	is.Equal(c.retention, time.Hour)
	is.Equal([]string(c.demoKeys), []string{"a-key-of-sixteen-chars", "b-key-of-sixteen-chars"})
	for _, bad := range [][]string{{"-rate-limit", "0"}, {"-workers", "-1"}, {"-retention", "0s"}, {"-signing-key", "short"}, {"-max-conns", "-1"}, {"-max-conns-per-addr", "-1"}, {"extra"}} {
		_, err := parseServe(bad, noEnv, io.Discard)
		is.True(err != nil)
	}
	_, err = parseServe(nil, func(k string) string { return map[string]string{"IMAGEGEN_WORKERS": "many"}[k] }, io.Discard)
	is.True(err != nil) // a bad env value is an error, not ignored
}

// keyWriter hands each stdout write to a check that runs while serve is
// still inside the write, so the check sees the server as it is at the
// moment the key appears.
type keyWriter struct{ onWrite func(string) }

func (w keyWriter) Write(p []byte) (int, error) { w.onWrite(string(p)); return len(p), nil }

// The demo key is printed only once serve is listening: a client that
// uses it straight away reaches the server.
func TestDemoKeyPrintedOnceListening(t *testing.T) {
	is := is.New(t)
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dialed := make(chan error, 1)
	stdout := keyWriter{onWrite: func(s string) {
		if strings.Contains(s, "igk_") {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				_ = conn.Close()
			}
			dialed <- err
		}
	}}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "-addr", addr}, noEnv, stdout, io.Discard) }()
	select {
	case err := <-dialed:
		is.NoErr(err) // the address accepted a connection when the key was printed
	case err := <-done:
		t.Fatalf("serve exited before printing a key: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no key printed within 10s")
	}
	cancel()
	is.NoErr(<-done)
}

func TestServeMountsTheConsole(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-operator", "ops")
	resp, err := http.Get(s.base + "/console/")
	is.NoErr(err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	is.NoErr(err)
	is.Equal(resp.StatusCode, http.StatusOK)
	is.True(strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"))
	is.True(strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'"))
	is.True(strings.Contains(string(body), `action="/console/signin"`)) // the sign-in page
	is.NoErr(s.stop())

	off := startServe(t, nil, "-console=false")
	resp, err = http.Get(off.base + "/console/")
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusNotFound)
	is.NoErr(off.stop())
}

// -allow-private-urls is the policy of the fetcher and of submit alike:
// without it, a reference on loopback is a 422 and nothing is charged;
// with it, the task is taken (this server runs no workers: nothing is
// fetched).
func TestServeChecksReferenceURLsByTheFetchersPolicy(t *testing.T) {
	const key = "test-demo-key-0123456789"
	const body = `{"scene":"image-to-image","prompt":"as a watercolour","image_input":["http://127.0.0.1:9/x.png"]}`
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow-private-urls=%v", allow), func(t *testing.T) {
			is := is.New(t)
			args := []string{"-demo-key", key, "-demo-credits", "5", "-workers", "0"}
			if allow {
				args = append(args, "-allow-private-urls")
			}
			s := startServe(t, nil, args...)
			code, m := s.call(t, "POST", "/api/v1/generate", key, body)
			if allow {
				is.Equal(code, http.StatusCreated)
				is.Equal(m["credits_remaining"], 4.0)
			} else {
				is.Equal(code, http.StatusUnprocessableEntity)
				is.Equal(m["error"].(map[string]any)["message"], "image_input: item 0 must be a public address (not 127.0.0.1)")
				code, m = s.call(t, "GET", "/api/v1/credits", key, "")
				is.Equal(code, http.StatusOK)
				is.Equal(m["credits_remaining"], 5.0) // nothing charged
			}
			is.NoErr(s.stop())
		})
	}
}
