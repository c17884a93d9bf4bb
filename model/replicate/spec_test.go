package replicate_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/imagegen/imagegen/model/provider/providertest"
)

// specValidator checks requests against Replicate's own openapi.json
// (/work/shared/specs/replicate) with kin-openapi, and against what
// WIRE.md adds: the bearer token, Prefer's N at most 60 (the spec's
// pattern lets 61 to 99 through), and Cancel-After's form and minimum.
type specValidator struct {
	router routers.Router
}

// newSpecValidator loads the spec with its server set to baseURL (the
// fake's /v1); the test skips when the spec is absent.
func newSpecValidator(t *testing.T, baseURL string) *specValidator {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(providertest.Spec(t, "replicate", "openapi.json"))
	if err != nil {
		t.Fatalf("loading the Replicate spec: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: baseURL}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("routing the Replicate spec: %v", err)
	}
	return &specValidator{router: router}
}

var (
	preferWait  = regexp.MustCompile(`^wait(=(\d+))?$`)
	cancelAfter = regexp.MustCompile(`^(\d+)$|^(\d+h)?(\d+m)?(\d+s)?$`)
)

// check returns what is wrong with a request whose body has been read.
func (v *specValidator) check(r *http.Request, body []byte) error {
	req := r.Clone(context.Background())
	req.URL.Scheme, req.URL.Host = "http", r.Host
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	route, pathParams, err := v.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("no route in the spec: %w", err)
	}
	err = openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: pathParams,
		Route:      route,
		Options:    &openapi3filter.Options{MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
	if err != nil {
		return err
	}
	if a := r.Header.Get("Authorization"); !strings.HasPrefix(a, "Bearer ") || len(a) < len("Bearer x") {
		return fmt.Errorf("Authorization %q is not a bearer token", a)
	}
	if p := r.Header.Get("Prefer"); p != "" {
		m := preferWait.FindStringSubmatch(p)
		if m == nil {
			return fmt.Errorf("Prefer %q", p)
		}
		if n, _ := strconv.Atoi(m[2]); m[2] != "" && (n < 1 || n > 60) {
			return fmt.Errorf("Prefer %q: N must be 1 to 60", p)
		}
	}
	if c := r.Header.Get("Cancel-After"); c != "" {
		if !cancelAfter.MatchString(c) {
			return fmt.Errorf("Cancel-After %q", c)
		}
		d, err := time.ParseDuration(c)
		if n, aerr := strconv.Atoi(c); aerr == nil {
			d, err = time.Duration(n)*time.Second, nil
		}
		if err != nil || d < 5*time.Second {
			return fmt.Errorf("Cancel-After %q: at least 5 s", c)
		}
	}
	return nil
}
