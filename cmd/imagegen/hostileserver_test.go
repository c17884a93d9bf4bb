package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/imagegen/imagegen"
)

// What a server sends (a task id, its status, its error, an error
// answer's message) reaches the user's terminal through generate and
// tasks: a server, or a proxy before it, that put an escape sequence in
// one would rewrite the terminal (retitle it, clear it, forge lines).
// Control characters are printed escaped, as table cells are.
func TestGeneratePrintsNoControlCharacterOfTheServer(t *testing.T) {
	const evil = "\x1b]0;owned\x07\x1b[2J\rforged line"
	failed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"task_id":"t\u001b[2J1","status":"pending\u001b]0;x\u0007","credits_used":1,"credits_remaining":9}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"task_id": "t1", "status": "failed", "error": evil, "model": "m\x1b[31m"})
	}))
	defer failed.Close()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusForbidden) // not retried
		_, _ = w.Write([]byte(evil))
	}))
	defer proxy.Close()

	for name, r := range map[string]cliRun{
		"a failed task":     runCLI(ctx, failed.URL, nil, "generate", "-prompt", "a fox"),
		"a proxy's 403":     runCLI(ctx, proxy.URL, nil, "generate", "-prompt", "a fox"),
		"tasks get via 403": runCLI(ctx, proxy.URL, nil, "tasks", "get", "t1"),
	} {
		if r.err == nil {
			t.Errorf("%s: no error", name)
		}
		for what, s := range map[string]string{"stdout": r.stdout, "stderr": r.stderr, "error": errString(r.err)} {
			if strings.ContainsAny(s, "\x1b\x07\r") {
				t.Errorf("%s: the %s holds the server's control characters: %q", name, what, s)
			}
		}
	}
}

// tasks get prints the task as JSON, whose encoder escapes C0 control
// characters but leaves C1 ones (U+0080 to U+009F) raw: U+009B starts an
// escape sequence on some terminals. They are printed as \u escapes,
// and the JSON still reads back as the server sent it.
func TestTasksGetPrintsNoC1ControlCharacter(t *testing.T) {
	const evil = "\u009b2J\u009d0;owned\u009c"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"task_id": "t1", "status": "failed", "error": evil})
	}))
	defer srv.Close()
	r := runCLI(ctx, srv.URL, nil, "tasks", "get", "t1")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if strings.ContainsAny(r.stdout, "\u009b\u009c\u009d") {
		t.Errorf("stdout holds the server's C1 control characters: %q", r.stdout)
	}
	var back struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &back); err != nil || back.Error != evil {
		t.Errorf("stdout reads back as error %q (%v), want %q", back.Error, err, evil)
	}
}

// imageServer is a server whose every task succeeds with n images of
// size bytes each (a PNG signature, then zeros), served without a
// Content-Length; downloads counts the image requests it answered.
type imageServer struct {
	*httptest.Server
	downloads atomic.Int64
}

func newImageServer(t *testing.T, n, size int) *imageServer {
	s := &imageServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/img/") {
			s.downloads.Add(1)
			body := make([]byte, size)
			copy(body, "\x89PNG\r\n\x1a\n")
			w.Header().Set("Content-Type", "image/png")
			for len(body) > 0 { // in pieces: no Content-Length to refuse up front
				k := min(len(body), 4096)
				_, _ = w.Write(body[:k])
				w.(http.Flusher).Flush()
				body = body[k:]
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"task_id":"t1","status":"pending","credits_used":1,"credits_remaining":9}`))
			return
		}
		images := make([]string, n)
		for i := range images {
			images[i] = fmt.Sprintf("%s/img/%d", s.URL, i)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"task_id": "t1", "status": "success", "images": images})
	}))
	t.Cleanup(s.Close)
	return s
}

// dirNames is the sorted names in the current directory.
func dirNames(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// A server that lists more images than a task can have (a broken or
// hostile one: the service keeps at most imagegen.MaxTaskImages from
// an answer) gets none of them downloaded: nothing is written.
func TestGenerateRefusesMoreImagesThanATaskHas(t *testing.T) {
	t.Chdir(t.TempDir())
	srv := newImageServer(t, imagegen.MaxTaskImages+1, 100)
	r := runCLI(ctx, srv.URL, nil, "generate", "-prompt", "a fox", "-o", "out.png")
	if r.err == nil || !strings.Contains(r.err.Error(), fmt.Sprint(imagegen.MaxTaskImages+1)) {
		t.Fatalf("error %v, want one naming the %d images listed", r.err, imagegen.MaxTaskImages+1)
	}
	if n := srv.downloads.Load(); n != 0 {
		t.Errorf("%d images downloaded, want none", n)
	}
	if names := dirNames(t); len(names) != 0 {
		t.Errorf("files written: %q", names)
	}

	// As many as a task may have are all written.
	t.Chdir(t.TempDir())
	srv = newImageServer(t, imagegen.MaxTaskImages, 100)
	if r := runCLI(ctx, srv.URL, nil, "generate", "-prompt", "a fox", "-o", "out.png"); r.err != nil {
		t.Fatal(r.err)
	}
	if names := dirNames(t); len(names) != imagegen.MaxTaskImages {
		t.Errorf("files written: %q, want %d", names, imagegen.MaxTaskImages)
	}
}

// The bytes one run writes are capped by -max-download-bytes: the image
// that goes past it is refused with an error naming the flag, and its
// partial file is removed (none is left under its final name nor as a
// temporary); the images written before it stay whole.
func TestGenerateCapsTheBytesItWrites(t *testing.T) {
	const size = 40_000
	for name, tc := range map[string]struct {
		n    int
		cap  string
		want []string
	}{
		"the third image goes past the cap": {n: 3, cap: "100000", want: []string{"out-1.png", "out-2.png"}},
		"one image larger than the cap":     {n: 1, cap: "1000", want: nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			srv := newImageServer(t, tc.n, size)
			r := runCLI(ctx, srv.URL, nil, "generate", "-prompt", "a fox", "-o", "out.png", "-max-download-bytes", tc.cap)
			if r.err == nil || !strings.Contains(r.err.Error(), "-max-download-bytes") {
				t.Fatalf("error %v, want one naming -max-download-bytes", r.err)
			}
			if names := dirNames(t); !slices.Equal(names, tc.want) {
				t.Errorf("files left: %q, want %q", names, tc.want)
			}
			for _, name := range tc.want {
				if fi, err := os.Stat(name); err != nil || fi.Size() != size {
					t.Errorf("%s: %v, %v; want %d bytes", name, fi, err, size)
				}
			}
		})
	}

	// 0 lifts the cap; at the cap exactly, everything is written.
	for _, limit := range []string{"0", fmt.Sprint(3 * size)} {
		t.Chdir(t.TempDir())
		srv := newImageServer(t, 3, size)
		if r := runCLI(ctx, srv.URL, nil, "generate", "-prompt", "a fox", "-o", "out.png", "-max-download-bytes", limit); r.err != nil {
			t.Fatalf("-max-download-bytes %s: %v", limit, r.err)
		}
		if names := dirNames(t); len(names) != 3 {
			t.Errorf("-max-download-bytes %s: files written: %q", limit, names)
		}
	}
}
