package replicate_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/imagegen/imagegen/model/provider/providertest"
)

// specValidator checks requests against Replicate's own OpenAPI
// description (testdata/openapi.json) with kin-openapi, and against what
// Replicate's docs add: the bearer token, Prefer's N at most 60 (the
// spec's pattern lets 61 to 99 through), and Cancel-After's form and
// minimum.
type specValidator struct {
	router routers.Router
}

// newSpecValidator loads the spec with its server set to baseURL (the
// fake's /v1).
func newSpecValidator(t *testing.T, baseURL string) *specValidator {
	t.Helper()
	return &specValidator{router: providertest.OpenAPIRouter(t, "openapi.json", baseURL)}
}

var (
	preferWait  = regexp.MustCompile(`^wait(=(\d+))?$`)
	cancelAfter = regexp.MustCompile(`^(\d+)$|^(\d+h)?(\d+m)?(\d+s)?$`)
)

// check returns what is wrong with a request whose body has been read.
func (v *specValidator) check(r *http.Request, body []byte) error {
	input, err := providertest.RouteRequest(v.router, r, body)
	if err != nil {
		return err
	}
	input.Options = &openapi3filter.Options{MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil {
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
