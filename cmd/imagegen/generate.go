package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/wire"
)

type generateConfig struct {
	apiFlags
	prompt string
	aspect string
	images stringList
	out    string
	seed   *int64
	// maxDownload is the most bytes of images the run writes (0: no cap).
	maxDownload int64
}

// generateFlags is generate's flag set, filling c.
func generateFlags(c *generateConfig, stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet("generate", stderr)
	fs.StringVar(&c.prompt, "prompt", "", "text describing the image (required)")
	fs.StringVar(&c.aspect, "aspect", string(imagegen.AspectAuto), "aspect ratio: "+aspectChoices())
	fs.Var(&c.images, "image", "URL of a reference image (repeatable; makes the task image-to-image)")
	fs.Func("seed", "random seed, 0 to 4294967294: the same seed and prompt make the same picture on models that take one (default: drawn by the server, and shown)", func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > imagegen.MaxSeed {
			return fmt.Errorf("must be a whole number from 0 to %d", int64(imagegen.MaxSeed))
		}
		c.seed = &n
		return nil
	})
	fs.StringVar(&c.out, "o", "", "file to write (with several images: name-1.ext, name-2.ext, …; default: the task id)")
	fs.Int64Var(&c.maxDownload, "max-download-bytes", defaultMaxDownloadBytes, fmt.Sprintf("most bytes of images one run writes in all; the image that would go past it is refused and its partial file removed (0: no cap). Each image is also at most %d MiB, and a task that lists more than %d images is refused", client.DefaultMaxDownload>>20, maxTaskImages))
	c.apiFlags.register(fs)
	return fs
}

func parseGenerate(args []string, stderr io.Writer) (generateConfig, error) {
	var c generateConfig
	fs := generateFlags(&c, stderr)
	if err := parseArgs(fs, args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("generate takes no arguments (got %q); give the prompt with -prompt", fs.Args())
	case strings.TrimSpace(c.prompt) == "":
		return c, errors.New("-prompt is required")
	case !imagegen.AspectRatio(c.aspect).Valid():
		return c, fmt.Errorf("-aspect must be one of %s (got %q)", aspectChoices(), c.aspect)
	case c.maxDownload < 0:
		return c, fmt.Errorf("-max-download-bytes must be 0 (no cap) or more (got %d)", c.maxDownload)
	}
	return c, nil
}

func aspectChoices() string {
	names := []string{string(imagegen.AspectAuto)}
	for _, a := range imagegen.AspectRatios() {
		names = append(names, string(a))
	}
	return strings.Join(names, ", ")
}

func (c generateConfig) request() imagegen.Request {
	req := imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: c.prompt, AspectRatio: imagegen.AspectRatio(c.aspect), Seed: c.seed}
	if len(c.images) > 0 {
		req.Scene, req.ImageInput = imagegen.SceneImageToImage, c.images
	}
	return req
}

// generate submits a generation, shows its progress on stderr while it
// waits, writes its images to files and prints their names on stdout.
func generate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parseGenerate(args, stderr)
	if err != nil {
		return helpIsNoError(err)
	}
	prog := newProgress(stderr, isTerminal(stderr), time.Now)
	api, server, err := newAPIClient(c.apiFlags, getenv, client.WithRateLimitWait(prog.RateLimitWait), client.WithFullView())
	if err != nil {
		return err
	}
	sub, err := submitter{api: api, stderr: stderr, sleep: sleepCtx}.submit(ctx, c.request())
	if err != nil {
		return explainSubmit(err, server)
	}
	fmt.Fprintf(stderr, "submitted task %s (%s)\n", tableCell(sub.TaskID), plural(sub.CreditsUsed, "credit"))

	prog.Status(tableCell(string(sub.Status)))
	task, err := watchTask(ctx, api, sub.TaskID, prog)
	prog.Done()
	if err != nil {
		if ctx.Err() != nil {
			msg := fmt.Sprintf("interrupted; task %s goes on (see it with: imagegen tasks get %s)", tableCell(sub.TaskID), tableCell(sub.TaskID))
			return &userError{msg: msg, err: ctx.Err()}
		}
		return explain(err, server)
	}
	if summary := timing(task); summary != "" {
		fmt.Fprintln(stderr, summary)
	}
	switch {
	case task.Status == imagegen.StatusFailed:
		return &userError{msg: fmt.Sprintf("task %s failed: %s", tableCell(task.TaskID), tableCell(task.Error)), err: task.Err()}
	case len(task.Images) == 0:
		return fmt.Errorf("task %s succeeded with no image", tableCell(task.TaskID))
	case len(task.Images) > maxTaskImages:
		return fmt.Errorf("task %s lists %d images, more than the %d a task may have; none was written", tableCell(task.TaskID), len(task.Images), maxTaskImages)
	}

	dir := "."
	if c.out != "" {
		dir = filepath.Dir(c.out)
	} else if !plainFileName(task.TaskID) {
		// Without -o the task id names the file; the server chose it.
		return fmt.Errorf("task %q succeeded, but its id cannot name a file in this directory; give one with -o", task.TaskID)
	}
	budget := &downloadBudget{limit: c.maxDownload}
	for i, u := range task.Images {
		path, err := saveImage(ctx, api, budget, u, dir, func(ext string) string {
			return outputPath(c.out, task.TaskID, i, len(task.Images), ext)
		})
		if errors.Is(err, errOverDownloadBudget) {
			msg := fmt.Sprintf("image %d of task %s: the images are more than -max-download-bytes (%d bytes) in all; it was not written (raise -max-download-bytes, or 0 for no cap)", i+1, tableCell(task.TaskID), c.maxDownload)
			return &userError{msg: msg, err: err}
		}
		if err != nil {
			return fmt.Errorf("image %d of task %s: %w", i+1, tableCell(task.TaskID), explain(err, server))
		}
		fmt.Fprintln(stdout, path)
	}
	fmt.Fprintf(stderr, "credits: %d used, %d remaining\n", sub.CreditsUsed, sub.CreditsRemaining)
	return nil
}

// maxTaskImages is the most images generate writes for one task: the
// most a task keeps. A server that lists more is broken or hostile, and
// none of them is downloaded.
const maxTaskImages = imagegen.MaxTaskImages

// maxSubmitTries bounds the submits of one generation after server or
// network errors.
const maxSubmitTries = 3

// settleWait bounds how long submit keeps asking while the server still
// holds the key for an earlier try (409 idempotency_key_in_use): a
// little more than the two minutes a server keeps a key in flight when
// the outcome of a try is unknown (a store error after the write), after
// which it settles that try (its task replayed if it was made). Giving
// up sooner left the user with a key only the CLI knew: running the
// command again submitted anew, and could charge twice.
const (
	settleWait  = 150 * time.Second
	settlePause = 5 * time.Second
)

// submitter submits one generation; sleep pauses between tries
// (sleepCtx; tests pass one that does not wait).
type submitter struct {
	api    *client.Client
	stderr io.Writer
	sleep  func(context.Context, time.Duration) error
}

// submit submits req with an idempotency key, retried with the same key
// after a server or network error (up to maxSubmitTries), and while the
// server still handles or settles an earlier try (for up to settleWait,
// said once on stderr): the server answers a retry with the first
// answer, so a retry never creates or charges a second task. A 429 is
// not retried: the user learns when to try again.
func (s submitter) submit(ctx context.Context, req imagegen.Request) (wire.Submitted, error) {
	key := "cli-" + rand.Text()
	var sub wire.Submitted
	var err error
	var waited time.Duration // while the key was in use
	for try := 0; ; {
		sub, err = s.api.SubmitWithKey(ctx, req, key)
		var pause time.Duration
		switch {
		case err == nil || ctx.Err() != nil:
			return sub, err
		case errors.Is(err, client.ErrIdempotencyKeyInUse) && waited < settleWait:
			if waited == 0 {
				fmt.Fprintf(s.stderr, "the server is still settling an earlier try of this submit; asking again for up to %v (the same key: nothing is charged twice)\n", settleWait)
			}
			pause = settlePause
			waited += pause
		case client.IsTransient(err) && try+1 < maxSubmitTries:
			try++
			pause = time.Duration(try) * time.Second
		default:
			return sub, err
		}
		if err := s.sleep(ctx, pause); err != nil {
			return sub, err
		}
	}
}

// explainSubmit is explain for a submit that failed. After a server
// error, or a network error past the dial, a task may have been made and
// charged all the same (the server's store wrote it before the error),
// and the command run again submits with a new idempotency key: the user
// is told so before trying again.
func explainSubmit(err error, server string) error {
	explained := explain(err, server)
	if !client.IsTransient(err) || failedDial(err) != nil {
		return explained
	}
	msg := explained.Error() + "\na task may have been created and charged all the same: see your balance (GET /api/v1/credits, or the console) before running the command again"
	return &userError{msg: msg, err: err}
}

// plainFileName reports whether s can name a file in the current
// directory as it is: not empty, no path separator of any OS, no control
// character, and not starting with a dot ("..", hidden files).
func plainFileName(s string) bool {
	return s != "" && s[0] != '.' && !strings.ContainsAny(s, `/\:`) &&
		!strings.ContainsFunc(s, unicode.IsControl) // C0, DEL and C1: the name is printed
}

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
