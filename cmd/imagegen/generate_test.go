package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/internal/testenv"
)

// These tests run the client commands in process against a real
// `imagegen serve` (startServe), as a user would from a shell.

const cliKey = "cli-test-key-0123456789"

// cliRun is the outcome of one command.
type cliRun struct {
	stdout, stderr string
	err            error
}

// runCLI runs `imagegen args…` with IMAGEGEN_API_KEY=cliKey and
// IMAGEGEN_SERVER=base, overridden or added to by env.
func runCLI(ctx context.Context, base string, env map[string]string, args ...string) cliRun {
	vars := map[string]string{envAPIKey: cliKey, envServer: base}
	for k, v := range env {
		vars[k] = v
	}
	var stdout, stderr bytes.Buffer
	err := run(ctx, args, func(k string) string { return vars[k] }, &stdout, &stderr)
	return cliRun{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// decodePNG reads the PNG at path and returns its size.
func decodePNG(t *testing.T, path string) (w, h int) {
	t.Helper()
	f, err := os.Open(path)
	is.New(t).NoErr(err)
	defer f.Close()
	img, err := png.Decode(f)
	is.New(t).NoErr(err)
	return img.Bounds().Dx(), img.Bounds().Dy()
}

// noSecrets checks that the API key shows in no output.
func (r cliRun) noSecrets(t *testing.T) {
	t.Helper()
	for _, s := range []string{r.stdout, r.stderr, errString(r.err)} {
		if strings.Contains(s, cliKey) {
			t.Fatalf("the API key was printed:\n%s", s)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

var statusLine = regexp.MustCompile(`(?m)^status: (pending|processing|success|failed) \(\d+\.\ds\)$`)

func TestGenerateWritesTheImage(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-demo-key", cliKey, "-demo-credits", "5", "-placeholder-delay", "300ms", "-rate-limit", "1000")
	dir := t.TempDir()
	out := filepath.Join(dir, "fox.png")

	r := runCLI(ctx, s.base, nil, "generate", "-prompt", "a red fox", "-aspect", "16:9", "-seed", "42", "-o", out)
	is.NoErr(r.err)
	// The full view's details, once it ended: model, seed and timing.
	is.True(regexp.MustCompile(`(?m)^model placeholder, seed 42, queued \d+\.\ds, ran \d+\.\ds$`).MatchString(r.stderr))
	is.Equal(r.stdout, out+"\n") // only the file name on stdout
	w, h := decodePNG(t, out)
	is.Equal(w*9, h*16) // 16:9
	r.noSecrets(t)

	// Progress on stderr: plain lines (not a terminal), one per status.
	lines := statusLine.FindAllStringSubmatch(r.stderr, -1)
	is.True(len(lines) >= 2)
	is.Equal(lines[0][1], "pending")
	is.Equal(lines[len(lines)-1][1], "success")
	is.True(!strings.Contains(r.stderr, "\r"))
	is.True(regexp.MustCompile(`(?m)^submitted task \S+ \(1 credit\)$`).MatchString(r.stderr))
	is.True(strings.Contains(r.stderr, "credits: 1 used, 4 remaining\n"))

	entries, err := os.ReadDir(dir)
	is.NoErr(err)
	is.Equal(len(entries), 1) // no temporary file left behind
}

func TestGenerateDefaultNameTasksGetAndReferenceImage(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-demo-key", cliKey, "-placeholder-delay", "10ms", "-rate-limit", "1000", "-allow-private-urls")
	t.Chdir(t.TempDir())

	// Without -o, the file is named after the task.
	r := runCLI(ctx, s.base, nil, "generate", "-prompt", "a wide sea", "-aspect", "16:9")
	is.NoErr(r.err)
	name := strings.TrimSpace(r.stdout)
	is.True(strings.HasSuffix(name, ".png"))
	id := strings.TrimSuffix(name, ".png")
	is.True(strings.Contains(r.stderr, "submitted task "+id+" "))
	w, h := decodePNG(t, name)
	is.Equal(w*9, h*16)

	// tasks get prints the task as JSON; a flag may follow the id, and
	// -server wins over IMAGEGEN_SERVER.
	r = runCLI(ctx, "http://127.0.0.1:1", nil, "tasks", "get", id, "-server", s.base)
	is.NoErr(r.err)
	var task client.Task
	is.NoErr(json.Unmarshal([]byte(r.stdout), &task))
	is.Equal(task.TaskID, id)
	is.Equal(task.Status, imagegen.StatusSuccess)
	is.Equal(len(task.Images), 1)
	is.True(strings.Contains(r.stdout, "\n  \"status\": \"success\",\n")) // indented
	is.True(strings.Contains(r.stdout, "&sig="))                          // URLs as they are, not \u0026
	r.noSecrets(t)

	// -image makes an image-to-image task; auto takes the reference's ratio.
	r = runCLI(ctx, s.base, nil, "generate", "-prompt", "the same, at night", "-image", task.Images[0], "-o", "night.png")
	is.NoErr(r.err)
	is.Equal(r.stdout, "night.png\n")
	w, h = decodePNG(t, "night.png")
	is.Equal(w*9, h*16)
}

func TestTasksGetMissing(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-demo-key", cliKey, "-rate-limit", "1000")
	r := runCLI(ctx, s.base, nil, "tasks", "get", "no-such-task")
	is.True(errors.Is(r.err, imagegen.ErrTaskNotFound))
	is.Equal(r.err.Error(), "task not found") // the server's message
	is.Equal(r.stdout, "")

	for _, args := range [][]string{{"tasks"}, {"tasks", "list"}, {"tasks", "get"}, {"tasks", "get", "a", "b"}} {
		r := runCLI(ctx, s.base, nil, args...)
		is.True(r.err != nil)
		is.Equal(r.stdout, "")
	}
}

func TestGenerateRefusedPrompt(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-demo-key", cliKey, "-placeholder-delay", "10ms", "-rate-limit", "1000")
	out := filepath.Join(t.TempDir(), "out.png")

	r := runCLI(ctx, s.base, nil, "generate", "-prompt", "an NSFW scene", "-o", out)
	is.True(errors.Is(r.err, client.ErrTaskFailed))
	is.True(strings.Contains(r.err.Error(), "failed: refused by content policy")) // the task's error
	is.Equal(r.stdout, "")
	is.True(strings.Contains(r.stderr, "status: failed ("))
	_, err := os.Stat(out)
	is.True(errors.Is(err, os.ErrNotExist)) // no file
}

func TestGenerateInsufficientCredits(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-demo-key", cliKey, "-demo-credits", "0", "-rate-limit", "1000")

	r := runCLI(ctx, s.base, nil, "generate", "-prompt", "a red fox")
	is.True(errors.Is(r.err, imagegen.ErrInsufficientCredits))
	is.Equal(r.err.Error(), "not enough credits for this generation") // the server's message
	is.Equal(r.stdout, "")
	is.True(!strings.Contains(r.stderr, "submitted"))
}

func TestGenerateRefusedKeyAndRateLimit(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-demo-key", cliKey, "-rate-limit", "2")

	r := runCLI(ctx, s.base, map[string]string{envAPIKey: "not-the-key-0123456789"}, "generate", "-prompt", "a fox")
	is.True(errors.Is(r.err, imagegen.ErrUnauthorized))
	is.True(strings.Contains(r.err.Error(), "missing or invalid API key"))
	is.True(strings.Contains(r.err.Error(), envAPIKey)) // where the key came from…
	is.True(!strings.Contains(r.err.Error(), "not-the-key"))

	r = runCLI(ctx, s.base, map[string]string{envAPIKey: ""}, "generate", "-prompt", "a fox")
	is.True(r.err != nil)
	is.True(strings.Contains(r.err.Error(), envAPIKey)) // …and where to put it

	for range 2 {
		is.True(errors.Is(runCLI(ctx, s.base, nil, "tasks", "get", "x").err, imagegen.ErrTaskNotFound))
	}
	r = runCLI(ctx, s.base, nil, "generate", "-prompt", "a fox")
	is.True(errors.Is(r.err, imagegen.ErrRateLimited))
	is.True(regexp.MustCompile(`^rate limit exceeded: .* \(retry after [0-9hms]+\)$`).MatchString(errString(r.err)))
	r.noSecrets(t)
}

// Cancelling the context (Ctrl-C in main) ends the wait at once, and
// tells which task goes on.
func TestGenerateInterrupted(t *testing.T) {
	is := is.New(t)
	s := startServe(t, nil, "-demo-key", cliKey, "-placeholder-delay", "1h", "-rate-limit", "1000")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	env := map[string]string{envAPIKey: cliKey, envServer: s.base}
	go func() {
		done <- run(ctx, []string{"generate", "-prompt", "slow"}, func(k string) string { return env[k] }, &stdout, &stderr)
	}()
	testenv.Eventually(t, 10*time.Second, "the task is processing", func() bool {
		return strings.Contains(stderr.String(), "status: processing")
	})
	cancel()
	select {
	case err := <-done:
		is.True(errors.Is(err, context.Canceled))
		id := regexp.MustCompile(`submitted task (\S+)`).FindStringSubmatch(stderr.String())[1]
		is.Equal(err.Error(), "interrupted; task "+id+" goes on (see it with: imagegen tasks get "+id+")")
	case <-time.After(5 * time.Second):
		t.Fatal("generate did not stop when its context ended")
	}
	is.Equal(stdout.String(), "")
}

func TestGenerateCannotReachServer(t *testing.T) {
	is := is.New(t)
	base := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	r := runCLI(ctx, base, nil, "generate", "-prompt", "a fox")
	is.True(r.err != nil)
	is.True(strings.HasPrefix(r.err.Error(), "cannot reach the server at "+base))
}

func TestParseGenerate(t *testing.T) {
	is := is.New(t)
	var stderr bytes.Buffer
	c, err := parseGenerate([]string{"-prompt", "a fox", "-image", "https://a.example/1.png", "-image", "https://a.example/2.png"}, &stderr)
	is.NoErr(err)
	req := c.request()
	is.Equal(req.Scene, imagegen.SceneImageToImage)
	is.Equal(req.ImageInput, []string{"https://a.example/1.png", "https://a.example/2.png"})
	is.Equal(req.AspectRatio, imagegen.AspectAuto)

	c, err = parseGenerate([]string{"-prompt", "a fox", "-aspect", "3:4"}, &stderr)
	is.NoErr(err)
	is.Equal(c.request(), imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a fox", AspectRatio: imagegen.Aspect3x4})
	is.Equal(c.maxDownload, int64(256<<20)) // the default cap

	for _, bad := range [][]string{nil, {"-prompt", "  "}, {"-prompt", "x", "-aspect", "5:4"}, {"-prompt", "x", "extra"}, {"-api-key", "k"}, {"-prompt", "x", "-max-download-bytes", "-1"}} {
		_, err := parseGenerate(bad, &stderr)
		is.True(err != nil)
	}
}
