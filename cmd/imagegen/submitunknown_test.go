package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/wire"
)

// A submit that still fails with a server error after its retries may
// have made (and charged) a task all the same: the server's store may
// have written it before the error. Running the command again submits
// with a new idempotency key, so generate says so instead of leaving the
// user to retry into a second charge. A refused connection sent nothing
// and says nothing of the kind.
func TestGenerateSaysAFailedSubmitMayHaveCharged(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(wire.ErrorBody{Error: wire.ErrorDetail{Code: wire.APIInternalError, Message: "internal server error"}})
	}))
	defer srv.Close()
	r := runCLI(ctx, srv.URL, nil, "generate", "-prompt", "a fox")
	is.True(r.err != nil)
	is.True(strings.Contains(r.err.Error(), "internal server error"))
	is.True(strings.Contains(r.err.Error(), "may have been created"))
	r.noSecrets(t)

	srv.Close()
	r = runCLI(ctx, srv.URL, nil, "generate", "-prompt", "a fox")
	is.True(r.err != nil)
	is.True(!strings.Contains(r.err.Error(), "may have been created"))
}
