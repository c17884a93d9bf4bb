package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestWebAndAPIShareTheBalance(t *testing.T) {
	is := is.New(t)
	a, err := newApp(context.Background())
	is.NoErr(err)
	do := func(method, path, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.AddCookie(&http.Cookie{Name: "session", Value: "alice"})
		r.Header.Set("Idempotency-Key", "click-1")
		w := httptest.NewRecorder()
		a.mux.ServeHTTP(w, r)
		return w
	}
	is.Equal(do("GET", "/", "").Code, http.StatusOK) // the app's own page still works
	is.Equal(do("POST", "/poster", "").Code, http.StatusOK)
	is.True(strings.Contains(do("POST", "/poster", "").Body.String(), "already charged")) // same click, one charge

	w := do("POST", "/api/v1/generate", `{"scene":"text-to-image","prompt":"a poster"}`)
	is.Equal(w.Code, http.StatusCreated)
	var sub struct {
		CreditsUsed      int64 `json:"credits_used"`
		CreditsRemaining int64 `json:"credits_remaining"`
	}
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &sub))
	is.Equal(sub.CreditsUsed, int64(1))
	is.Equal(sub.CreditsRemaining, int64(18)) // 20 - 1 web - 1 API
	is.Equal(strings.TrimSpace(do("GET", "/balance", "").Body.String()), "18")

	// Without a session or key the API answers 401 in its own JSON shape.
	r := httptest.NewRequest("GET", "/api/v1/tasks/x", nil)
	w = httptest.NewRecorder()
	a.mux.ServeHTTP(w, r)
	is.Equal(w.Code, http.StatusUnauthorized)
}
