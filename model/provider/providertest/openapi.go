package providertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// OpenAPIRouter loads the OpenAPI description name of TestData (as Spec
// does, on the test's goroutine), with its server set to baseURL (a
// fake's), and returns a router of its operations.
func OpenAPIRouter(t testing.TB, name, baseURL string) routers.Router {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(Spec(t, name))
	if err != nil {
		t.Fatalf("loading the OpenAPI description %s: %v", name, err)
	}
	doc.Servers = openapi3.Servers{{URL: baseURL}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("routing the OpenAPI description %s: %v", name, err)
	}
	return router
}

// RouteRequest finds the operation of router that r, a request a fake
// received and whose body it has read, calls; it returns the input of
// openapi3filter.ValidateRequest for it, all but the Options.
func RouteRequest(router routers.Router, r *http.Request, body []byte) (*openapi3filter.RequestValidationInput, error) {
	req := r.Clone(context.Background())
	req.URL.Scheme, req.URL.Host = "http", r.Host
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	route, pathParams, err := router.FindRoute(req)
	if err != nil {
		return nil, fmt.Errorf("no route in the spec: %w", err)
	}
	return &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route}, nil
}
