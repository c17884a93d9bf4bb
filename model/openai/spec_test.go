package openai_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/imagegen/imagegen/model/provider/providertest"
)

// specValidator checks requests against OpenAI's OpenAPI description
// (testdata/openapi.images-subset.yaml) with kin-openapi.
type specValidator struct {
	router routers.Router

	mu        sync.Mutex
	validated int
	errs      []error
}

// newSpecValidator loads the spec with its server set to baseURL (the
// fake's /v1).
func newSpecValidator(t *testing.T, baseURL string) *specValidator {
	t.Helper()
	return &specValidator{router: providertest.OpenAPIRouter(t, "openapi.images-subset.yaml", baseURL)}
}

// validate checks one request whose body has been read.
func (v *specValidator) validate(r *http.Request, body []byte) {
	err := v.check(r, body)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.validated++
	if err != nil {
		v.errs = append(v.errs, fmt.Errorf("%s %s: %w", r.Method, r.URL.Path, err))
	}
}

func (v *specValidator) check(r *http.Request, body []byte) error {
	input, err := providertest.RouteRequest(v.router, r, body)
	if err != nil {
		return err
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	multipartBody := mt == "multipart/form-data"
	// Method, path, parameters, security, and JSON bodies: kin-openapi.
	input.Options = &openapi3filter.Options{
		MultiError:         true,
		ExcludeRequestBody: multipartBody,
		AuthenticationFunc: func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
			if in.SecurityScheme.Type != "http" || in.SecurityScheme.Scheme != "bearer" {
				return fmt.Errorf("unexpected security scheme %s", in.SecuritySchemeName)
			}
			if !strings.HasPrefix(input.Request.Header.Get("Authorization"), "Bearer ") {
				return fmt.Errorf("no bearer token")
			}
			return nil
		},
	}
	if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil || !multipartBody {
		return err
	}
	// Multipart bodies: kin-openapi's form decoder reads a part whose
	// property schema is an anyOf (model, size, image here) as null, so
	// decode the form here, by the schema, and check the object against
	// the schema with kin-openapi.
	media := input.Route.Operation.RequestBody.Value.Content.Get("multipart/form-data")
	if media == nil {
		return fmt.Errorf("the spec takes no multipart/form-data body here")
	}
	obj, err := formObject(body, params["boundary"], media.Schema.Value)
	if err != nil {
		return err
	}
	return media.Schema.Value.VisitJSON(obj, openapi3.MultiErrors())
}

// formObject turns a multipart form into the JSON object its schema
// describes: text fields parsed as the property's type (the first type
// of an anyOf that parses), files as strings, and a name given several
// times as an array. The spec's own examples send several files as
// repeated "image[]" parts (curl -F "image[]=@a.png"), the schema's
// property being "image": "name[]" is read as "name".
func formObject(body []byte, boundary string, schema *openapi3.Schema) (map[string]any, error) {
	values := map[string][]any{}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for range 100 {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(p.FormName(), "[]")
		var val any = string(data)
		if prop := schema.Properties[name]; prop != nil && p.FileName() == "" {
			val = parseField(string(data), prop.Value)
		}
		values[name] = append(values[name], val)
	}
	obj := map[string]any{}
	for name, vs := range values {
		if len(vs) == 1 {
			obj[name] = vs[0]
		} else {
			obj[name] = vs
		}
	}
	return obj, nil
}

// parseField parses a form field's text as the schema's type.
func parseField(raw string, s *openapi3.Schema) any {
	types := s.Type.Slice()
	for _, alt := range s.AnyOf {
		types = append(types, alt.Value.Type.Slice()...)
	}
	for _, typ := range types {
		switch typ {
		case "integer", "number":
			if f, err := strconv.ParseFloat(raw, 64); err == nil {
				return f
			}
		case "boolean":
			if b, err := strconv.ParseBool(raw); err == nil {
				return b
			}
		case "string":
			return raw
		}
	}
	return raw
}

func (v *specValidator) errors() []error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]error(nil), v.errs...)
}

func (v *specValidator) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.validated
}
