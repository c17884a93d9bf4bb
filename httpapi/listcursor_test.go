package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/wire"
)

// A next_cursor serves only the user and the list it was given for:
// another user presenting it, or the same user on the other list, gets
// 422 invalid_params naming the cursor, and it needs no escaping in a
// query.
func TestListCursorsServeOnlyTheirUserAndList(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	bob := e.user("bob", 10)
	for range 3 {
		e.submitted() // alice's
		is.Equal(e.submit(bob, t2i).Code, http.StatusCreated)
	}
	next := func(key, path string) string {
		t.Helper()
		w := e.do("GET", path+"?limit=1", key, "")
		is.Equal(w.Code, http.StatusOK)
		var page struct {
			Next string `json:"next_cursor"`
		}
		is.NoErr(json.Unmarshal(w.Body.Bytes(), &page))
		is.True(page.Next != "")
		is.Equal(url.QueryEscape(page.Next), page.Next) // URL-safe as it is
		return page.Next
	}
	const tasks, ledger = "/api/v1/tasks", "/api/v1/credits/ledger"
	aliceTasks, aliceLedger := next(e.key, tasks), next(e.key, ledger)
	is.Equal(e.do("GET", tasks+"?limit=1&cursor="+aliceTasks, e.key, "").Code, http.StatusOK)
	is.Equal(e.do("GET", ledger+"?limit=1&cursor="+aliceLedger, e.key, "").Code, http.StatusOK)

	for _, bad := range []struct{ key, path, cursor string }{
		{bob, tasks, aliceTasks},
		{bob, ledger, aliceLedger},
		{e.key, ledger, aliceTasks},
		{e.key, tasks, aliceLedger},
	} {
		msg := wantError(t, e.do("GET", bad.path+"?cursor="+bad.cursor, bad.key, ""), http.StatusUnprocessableEntity, wire.APIInvalidParams)
		is.True(strings.HasPrefix(msg, "cursor: "))
	}
}
