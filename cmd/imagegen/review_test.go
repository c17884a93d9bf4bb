package main

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// fakeAPI is a server that answers submit and poll with taskID, and
// serves one PNG as its image.
func fakeAPI(t *testing.T, taskID string) *httptest.Server {
	t.Helper()
	var pngData bytes.Buffer
	is.New(t).NoErr(png.Encode(&pngData, image.NewRGBA(image.Rect(0, 0, 2, 2))))
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/generate":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(map[string]any{"task_id": taskID, "status": "pending", "credits_used": 1, "credits_remaining": 4})
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/tasks/"):
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"task_id": taskID, "status": "success", "images": []string{srv.URL + "/img/1.png"}})
		case r.URL.Path == "/img/1.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(pngData.Bytes())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A task id is the server's to choose; without -o it names the file, so
// one that is not a plain file name must not write outside the current
// directory.
func TestGenerateRefusesTaskIDThatIsNotAFileName(t *testing.T) {
	for _, id := range []string{"../escaped", "sub/dir", `..\escaped`, "..", ".hidden"} {
		t.Run(id, func(t *testing.T) {
			is := is.New(t)
			root := t.TempDir()
			work := filepath.Join(root, "work")
			is.NoErr(os.MkdirAll(filepath.Join(work, "sub"), 0o755))
			t.Chdir(work)
			srv := fakeAPI(t, id)

			r := runCLI(ctx, srv.URL, nil, "generate", "-prompt", "a fox")
			is.True(r.err != nil) // refused
			is.True(strings.Contains(r.err.Error(), "-o"))
			is.Equal(r.stdout, "") // no file named
			for _, dir := range []string{root, work, filepath.Join(work, "sub")} {
				entries, err := os.ReadDir(dir)
				is.NoErr(err)
				for _, e := range entries {
					if e.Name() != "work" && e.Name() != "sub" {
						t.Errorf("%s holds %s", dir, e.Name())
					}
				}
			}
		})
	}
}

// With -o the task id names no file, so any id works.
func TestGenerateWithOutputTakesAnyTaskID(t *testing.T) {
	is := is.New(t)
	srv := fakeAPI(t, "../odd")
	out := filepath.Join(t.TempDir(), "fox.png")
	r := runCLI(ctx, srv.URL, nil, "generate", "-prompt", "a fox", "-o", out)
	is.NoErr(r.err)
	is.Equal(strings.TrimSpace(r.stdout), out)
	_, err := os.Stat(out)
	is.NoErr(err)
}
