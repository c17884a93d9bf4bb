package provider_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/provider"
)

// Each builder makes a fresh request per attempt: its method, a copy of
// the header (later changes to the caller's header do not leak in),
// Accept: application/json unless given, and the body anew.
func TestBuilders(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	header := http.Header{"Authorization": {"Key k"}}
	for _, tc := range []struct {
		build  provider.BuildFunc
		method string
		body   string
		ctype  string
	}{
		{provider.Get("http://127.0.0.1/x", header), http.MethodGet, "", ""},
		{provider.Put("http://127.0.0.1/x", header), http.MethodPut, "", ""},
		{provider.Post("http://127.0.0.1/x", "application/json", []byte(`{"a":1}`), header), http.MethodPost, `{"a":1}`, "application/json"},
	} {
		for range 2 { // a retry gets the same request again
			req, err := tc.build(ctx)
			is.NoErr(err)
			is.Equal(req.Method, tc.method)
			is.Equal(req.Header.Get("Authorization"), "Key k")
			is.Equal(req.Header.Get("Accept"), "application/json")
			is.Equal(req.Header.Get("Content-Type"), tc.ctype)
			var body []byte
			if req.Body != nil {
				body, err = io.ReadAll(req.Body)
				is.NoErr(err)
			}
			is.Equal(string(body), tc.body)
			req.Header.Set("Authorization", "changed") // the builder's copy stays
		}
	}
	is.Equal(header.Get("Content-Type"), "") // Post did not touch the caller's header
	accept := provider.Get("http://127.0.0.1/x", http.Header{"Accept": {"image/*"}})
	req, err := accept(ctx)
	is.NoErr(err)
	is.Equal(req.Header.Get("Accept"), "image/*")
}
