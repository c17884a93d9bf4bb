package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
)

//go:embed assets
var assets embed.FS

// pageNames are the templates in assets/, each rendered inside layout.html.
var pageNames = []string{"signin", "message", "playground", "tasks", "task", "keys", "credits", "ops"}

func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"when": func(t time.Time) string {
			if s := when(t); s != "" {
				return s
			}
			return "—"
		},
		"short": func(s string, n int) string {
			r := []rune(s)
			if len(r) <= n {
				return s
			}
			return string(r[:n]) + "…"
		},
		"signed": func(n int64) string { return fmt.Sprintf("%+d", n) },
	}
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

func staticFiles() fs.FS {
	sub, _ := fs.Sub(assets, "assets/static") // the directory is embedded: no error
	return sub
}

// static serves the embedded file {file}; anything that is not one of
// them (a directory, a missing name) is the console's 404: no listing.
func (c *Console) static(files fs.FS) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("file")
		if st, err := fs.Stat(files, name); err != nil || !st.Mode().IsRegular() {
			c.notFound(w, r)
			return
		}
		http.ServeFileFS(w, r, files, name)
	}
}

// page is what every template gets; each page fills its own part.
type page struct {
	Title   string
	Error   string // an error: shown in a red alert box
	Message string // a success: shown in a green notice
	Info    string // neither: shown in a neutral box
	Data    any    // the page's own data

	// Filled by render.
	Prefix string
	CSRF   string
	Viewer viewer
	Nav    string // the page name, to mark the current link
}

// render writes page name with status. The page is rendered into a
// buffer first, so a template error is a clean 500.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.Prefix = c.cfg.Prefix
	p.Viewer = viewerFrom(r.Context())
	p.Nav = name
	p.CSRF = c.csrfToken(w, r, p.Viewer.User)
	var buf bytes.Buffer
	if err := c.pages[name].Execute(&buf, p); err != nil {
		c.log.ErrorContext(r.Context(), "console: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	if isAPIPath(c, r) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
		return
	}
	c.errorPage(w, r, http.StatusNotFound, "Not found", "There is no such page here.")
}

func (c *Console) serverError(w http.ResponseWriter, r *http.Request, err error) {
	c.log.ErrorContext(r.Context(), "console: request failed", "path", r.URL.Path, "err", err)
	if isAPIPath(c, r) {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
		return
	}
	c.errorPage(w, r, http.StatusInternalServerError, "Something went wrong", "Something went wrong on our side. Please try again.")
}

// errorPage answers status with the message page, msg in its alert box.
func (c *Console) errorPage(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	c.render(w, r, status, "message", page{Title: title, Error: msg})
}

// listFailed answers a list page the service refused or could not read:
// 400 with badQuery when the page's query (a cursor, a status) is not
// valid, else a server error. It reports whether it answered.
func (c *Console) listFailed(w http.ResponseWriter, r *http.Request, err error, badQuery string) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, imagegen.ErrInvalidParams):
		c.errorPage(w, r, http.StatusBadRequest, "Bad request", badQuery)
	default:
		c.serverError(w, r, err)
	}
	return true
}

func isAPIPath(c *Console, r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, c.path("/api/"))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
