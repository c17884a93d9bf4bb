package httpapi_test

import (
	"testing"

	"github.com/imagegen/imagegen/httpapi"
)

// A Prefix or OpenAIPrefix that is not a plain, clean path made New
// panic on net/http's pattern parser (a space or tab read as a method,
// a brace as a bad wildcard, "//" or ".." as a path that never
// matches), so `imagegen serve -openai-prefix "/v1 x"` died with a
// stack trace; "/{v}" was taken as a wildcard, the API answering under
// any first segment. New refuses them with an error naming the field.
func TestNewRefusesPrefixesThatAreNotPlainPaths(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/a b", "/a\tb", "/a\nb", "/a{x}", "/{v}", "/a/{$}", "/a//b", "/a/../b", "/a/./b", "/a}"} {
		for _, field := range []string{"Prefix", "OpenAIPrefix"} {
			c := httpapi.Config{Service: e.svc, Limiter: allowAll{}}
			if field == "Prefix" {
				c.Prefix = p
			} else {
				c.OpenAIPrefix = p
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s %q: New panicked: %v", field, p, r)
					}
				}()
				if _, err := httpapi.New(c); err == nil {
					t.Errorf("%s %q: accepted", field, p)
				}
			}()
		}
	}
	for _, p := range []string{"/api/v2", "/v1", "/openai/v1/", "/a-b_c.d~e"} { // still fine
		if _, err := httpapi.New(httpapi.Config{Service: e.svc, Limiter: allowAll{}, OpenAIPrefix: p}); err != nil {
			t.Errorf("OpenAIPrefix %q: %v", p, err)
		}
	}
}
