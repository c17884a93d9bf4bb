package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/apitest"
	"github.com/imagegen/imagegen/store/memory"
)

// FuzzListQueries sends any raw query to the two cursor-paged lists of
// the API, GET /tasks and GET /credits/ledger, on the memory store with
// tasks and ledger entries to page through: the answer is a 200 or a
// 4xx, never a 5xx (a malformed query, limit, view, status or cursor is
// the client's mistake), and a 200's next_cursor is one the same list
// accepts.
func FuzzListQueries(f *testing.F) {
	clock := imagegentest.NewClock(time.Time{})
	s := apitest.New(f, apitest.Config{Clock: clock, Store: testenv.Memory(f, memory.Config{Clock: clock, Retention: retention}), Limit: 1 << 30})
	key := s.User("alice", 100)
	for range 5 {
		req := imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse"}
		if _, err := s.Service.Submit(context.Background(), "alice", req); err != nil {
			f.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	for _, q := range []string{
		"", "limit=2", "limit=1&cursor=3", "status=pending&view=full&limit=1", "cursor=abc", "cursor=-1", "cursor=18446744073709551616",
		"cursor=%ff", "limit=0", "limit=101", "limit=+5", "view=FULL", "status=done", "cursor=1&cursor=2", "x=1", "%zz", "cursor=0001",
		"limit=1&cursor=99999999999999999999", ";", "cursor=%00", "status=&limit=",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		for _, path := range []string{"/api/v1/tasks", "/api/v1/credits/ledger"} {
			w := getQuery(s.Mux, path, key, rawQuery)
			if w.Code != http.StatusOK && (w.Code < 400 || w.Code > 499) {
				t.Fatalf("GET %s?%s: %d %s", path, rawQuery, w.Code, w.Body)
			}
			if w.Code != http.StatusOK {
				continue
			}
			var page struct {
				Next string `json:"next_cursor"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil {
				t.Fatalf("GET %s?%s: %v in %s", path, rawQuery, err, w.Body)
			}
			if page.Next == "" {
				continue
			}
			if w := getQuery(s.Mux, path, key, "cursor="+url.QueryEscape(page.Next)); w.Code != http.StatusOK {
				t.Fatalf("GET %s?%s gave next_cursor %q, which it answers with %d %s", path, rawQuery, page.Next, w.Code, w.Body)
			}
		}
	})
}

// getQuery sends GET path with rawQuery as it is (no check that a
// client would send it) and key as Bearer token.
func getQuery(h http.Handler, path, key, rawQuery string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.URL.RawQuery = rawQuery
	r.Header.Set("Authorization", "Bearer "+key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
