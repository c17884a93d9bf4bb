package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// backendModules are the client libraries of the shared backends: a
// program that embeds the in-memory stack must link none of them.
var backendModules = []string{"github.com/jackc/pgx", "github.com/redis/go-redis", "github.com/aws/aws-sdk-go-v2"}

// TestQuickstartInAFreshModule does what the README asks of a newcomer:
// main.go alone in a new module that requires imagegen (replaced by this
// clone), built with go build. The binary links no backend client
// (go version -m lists every module linked in), and it runs: it prints
// the API's address and a key, generates an image and stops on an
// interrupt.
func TestQuickstartInAFreshModule(t *testing.T) {
	bin := buildInFreshModule(t)

	t.Run("LinksNoBackendClient", func(t *testing.T) {
		is := is.New(t)
		out, err := exec.Command(goTool(t), "version", "-m", bin).CombinedOutput()
		is.NoErr(err)
		mods := string(out)
		is.True(strings.Contains(mods, "\tdep\tgithub.com/imagegen/imagegen\t")) // the listing is the module list
		for _, m := range backendModules {
			if strings.Contains(mods, m) {
				t.Errorf("the quickstart binary links %s:\n%s", m, mods)
			}
		}
	})

	t.Run("Runs", func(t *testing.T) {
		is := is.New(t)
		cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
		stdout, err := cmd.StdoutPipe()
		is.NoErr(err)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		is.NoErr(cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) // a no-op once it has stopped
		lines := bufio.NewScanner(stdout)
		api, key := field(t, lines, "API: "), field(t, lines, "key: ")

		c := &http.Client{Timeout: 30 * time.Second}
		req, _ := http.NewRequest("POST", api+"/generate", strings.NewReader(`{"scene":"text-to-image","prompt":"a red fox"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		var sub struct {
			TaskID string `json:"task_id"`
		}
		is.Equal(call(t, c, req, &sub), http.StatusCreated)

		var task struct {
			Status string   `json:"status"`
			Images []string `json:"images"`
		}
		for range 10 { // each call waits up to 5s for the task to finish
			req, _ = http.NewRequest("GET", api+"/tasks/"+sub.TaskID, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Prefer", "wait=5")
			is.Equal(call(t, c, req, &task), http.StatusOK)
			if task.Status == "success" {
				break
			}
		}
		is.Equal(task.Status, "success")
		is.Equal(len(task.Images), 1)
		res, err := c.Get(task.Images[0]) // signed: no key needed
		is.NoErr(err)
		png, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		is.NoErr(err)
		is.True(bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")))

		is.NoErr(cmd.Process.Signal(os.Interrupt))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			is.NoErr(err) // a clean exit on Ctrl-C
		case <-time.After(20 * time.Second):
			t.Fatalf("still running 20s after an interrupt; stderr:\n%s", stderr.String())
		}
	})
}

// The packages an embedding app adds beside server (the console, metrics,
// probes, webhooks, the Go client) link no backend client either: only
// store/redis, store/postgres, ratelimit/redis, ratelimit/postgres,
// blob/redis and blob/s3 (and blob.Open, which names them) do.
func TestEmbeddingPackagesLinkNoBackendClient(t *testing.T) {
	pkgs := []string{"server", "console", "metrics", "health", "webhook", "client", "httpapi", "store/memory", "blob/memory", "blob/file", "ratelimit", "model/placeholder"}
	args := []string{"list", "-deps"}
	for _, p := range pkgs {
		args = append(args, "github.com/imagegen/imagegen/"+p)
	}
	out, err := exec.Command(goTool(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, m := range backendModules {
		if strings.Contains(string(out), m) {
			t.Errorf("one of %v imports %s", pkgs, m)
		}
	}
}

// buildInFreshModule copies main.go into a new module whose go.mod
// requires imagegen replaced by this clone, and builds it. It works from
// the module cache (GOPROXY=off, with this repository's go.sum so every
// checksum is known), falling back to the configured proxy; it skips only
// when neither can provide a module.
func buildInFreshModule(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod := "module example.com/quickstart\n\n" + goDirective(t, goMod) + "\n\n" +
		"require github.com/imagegen/imagegen v0.0.0\n\n" +
		"replace github.com/imagegen/imagegen => " + root + "\n"
	copyFile(t, filepath.Join(root, "go.sum"), filepath.Join(dir, "go.sum"))
	copyFile(t, "main.go", filepath.Join(dir, "main.go"))
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(proxy string, args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goTool(t), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
		if proxy != "" {
			cmd.Env = append(cmd.Env, "GOPROXY="+proxy)
		}
		return cmd.CombinedOutput()
	}
	if out, err := run("off", "mod", "tidy"); err != nil {
		if out2, err2 := run("", "mod", "tidy"); err2 != nil {
			t.Skipf("go mod tidy cannot get the modules, from the module cache (run go mod download in the repository) or the proxy:\n%s\n%s", out, out2)
		}
	}
	bin := filepath.Join(dir, "quickstart")
	if out, err := run("off", "build", "-o", bin, "."); err != nil {
		t.Fatalf("main.go does not build in a fresh module: %v\n%s", err, out)
	}
	return bin
}

// goDirective returns the go line of a go.mod, so the fresh module asks
// for the same language version as the library.
func goDirective(t *testing.T, goMod []byte) string {
	for line := range strings.Lines(string(goMod)) {
		if strings.HasPrefix(line, "go ") {
			return strings.TrimSpace(line)
		}
	}
	t.Fatal("go.mod has no go directive")
	return ""
}

func goTool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	return path
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// field reads lines until one starts with prefix and returns the rest.
func field(t *testing.T, lines *bufio.Scanner, prefix string) string {
	t.Helper()
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), prefix); ok {
			return rest
		}
	}
	t.Fatalf("the program stopped before printing %q: %v", prefix, lines.Err())
	return ""
}

// call sends req and decodes the JSON answer into v, returning the status.
func call(t *testing.T, c *http.Client, req *http.Request, v any) int {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s %s: %d %s: %v", req.Method, req.URL.Path, res.StatusCode, body, err)
	}
	return res.StatusCode
}
