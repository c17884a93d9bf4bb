package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Odd client input on every route of a task, an image or a model (ids
// with NUL, invalid UTF-8, encoded slashes, dot segments, 5000 bytes;
// odd queries and Prefer values; four methods) answers below 500.
func TestOddInputNever5xx(t *testing.T) {
	o := newOpenAIEnv(t, 100000)
	e := o.env
	id := e.submitted()
	odd := []string{"", "%00", "%ff", "a%2Fb", "..", "%2e%2e", strings.Repeat("a", 5000), "x%0d%0aSet-Cookie:%20a=b",
		id, strings.ToUpper(id), id + "%00", " " + id, "%C0%AE", "\u2028", "%F0%9F%98%80"}
	queries := []string{"", "?view=full", "?view=basic&view=full", "?limit=0", "?limit=-1", "?limit=1e3", "?limit=" + strings.Repeat("9", 50),
		"?cursor=%00", "?cursor=" + strings.Repeat("9", 300), "?cursor=18446744073709551615", "?cursor=-5", "?cursor=0", "?cursor=1",
		"?status=%ff", "?status=pending&status=failed", "?%", "?a=%zz", "?;", "?limit=1&cursor=999999999999999", "?view=full&status=pending",
		"?expires=9999999999999999999&sig=", "?expires=-1&sig=a", "?view=%00"}
	paths := []string{"/api/v1/tasks/%s", "/api/v1/tasks/%s/cancel", "/api/v1/images/%s", "/v1/models/%s"}
	for _, p := range paths {
		for _, s := range odd {
			for _, q := range queries {
				for _, m := range []string{"GET", "POST", "HEAD", "DELETE"} {
					path := fmt.Sprintf(p, s) + q
					r2, err := http.NewRequest(m, "http://x"+path, nil)
					if err != nil {
						continue
					}
					r2.RequestURI = path
					r2.Header.Set("Authorization", "Bearer "+e.key)
					for _, pw := range []string{"", "wait=0", "wait=1;x", "wait=" + strings.Repeat("9", 30)} {
						if pw != "" {
							r2.Header.Set("Prefer", pw)
							if strings.Contains(pw, "wait=1") {
								continue // would wait on the manual clock
							}
						}
						w := httptest.NewRecorder()
						e.h.ServeHTTP(w, r2)
						if w.Code >= 500 {
							t.Errorf("%s %s Prefer %q: %d %s", m, path, pw, w.Code, w.Body)
						}
					}
				}
			}
		}
	}
	for _, q := range queries {
		for _, p := range []string{"/api/v1/tasks", "/api/v1/credits/ledger", "/api/v1/credits", "/api/v1/webhook-secret", "/v1/models", "/api/v1/openapi.json"} {
			w := e.do("GET", p+q, e.key, "")
			if w.Code >= 500 {
				t.Errorf("GET %s: %d %s", p+q, w.Code, w.Body)
			}
		}
	}
}

// Odd submit bodies (extreme seeds, odd callback and reference URLs,
// private addresses in every spelling, odd Unicode, trailing bytes, a
// body of half a megabyte), on both submit endpoints, answer below 500
// and charge nothing unless the task is made.
func TestOddSubmitBodies(t *testing.T) {
	o := newOpenAIEnv(t, 100000)
	e := o.env
	bodies := []string{
		`{"scene":"text-to-image","prompt":"a","seed":9223372036854775807}`,
		`{"scene":"text-to-image","prompt":"a","seed":-9223372036854775808}`,
		`{"scene":"text-to-image","prompt":"a","seed":-0}`,
		`{"scene":"text-to-image","prompt":"a","seed":0.0}`,
		`{"scene":"text-to-image","prompt":"a","callback_url":"https://example.com/` + strings.Repeat("a", 3000) + `"}`,
		`{"scene":"text-to-image","prompt":"a","callback_url":"https://[::1%25eth0]/"}`,
		`{"scene":"text-to-image","prompt":"a","callback_url":"https://example.com:0/"}`,
		`{"scene":"text-to-image","prompt":"a","callback_url":"https://example.com:99999/"}`,
		`{"scene":"text-to-image","prompt":"a","callback_url":"https://example.com/\u0000"}`,
		`{"scene":"text-to-image","prompt":"a","callback_events":["completed","completed"],"callback_url":"https://example.com/"}`,
		`{"scene":"text-to-image","prompt":"a","callback_events":[],"callback_url":"https://example.com/"}`,
		`{"scene":"text-to-image","prompt":"a","callback_events":null}`,
		`{"scene":"image-to-image","prompt":"a","image_input":null}`,
		`{"scene":"image-to-image","prompt":"a","image_input":[""]}`,
		`{"scene":"image-to-image","prompt":"a","image_input":["http://[fe80::1%25lo]/"]}`,
		`{"scene":"image-to-image","prompt":"a","image_input":["http://0/"]}`,
		`{"scene":"image-to-image","prompt":"a","image_input":["http://0x7f.1/"]}`,
		`{"scene":"image-to-image","prompt":"a","image_input":["http://metadata.google.internal/"]}`,
		`{"scene":"image-to-image","prompt":"a","image_input":["http://localhost./"]}`,
		`{"scene":"image-to-image","prompt":"a","image_input":["http://foo.localhost/"]}`,
		`{"scene":"image-to-image","prompt":"a","image_input":["http://[::]/"]}`,
		`{"scene":"image-to-image","prompt":"a","image_input":["http://[64:ff9b::7f00:1]/"]}`,
		`{"scene":"image-to-image","prompt":"a","image_input":["http://\uff11\uff12\uff17.0.0.1/"]}`,
		`{"scene":"text-to-image","prompt":"` + strings.Repeat("\u200b", 5) + `"}`,
		`{"scene":"text-to-image","prompt":"` + strings.Repeat("é", 2000) + `"}`,
		`{"scene":"text-to-image","prompt":"` + strings.Repeat("é", 2001) + `"}`,
		`{"scene":"text-to-image","prompt":"a\ud800\udc00"}`,
		`{"scene":"text-to-image","prompt":"a\udc00"}`,
		`{"scene":"text-to-image","prompt":"a","aspect_ratio":"auto "}`,
		`{"scene":"text-to-image","prompt":"a","aspect_ratio":""}`,
		`{"\u0073cene":"text-to-image","prompt":"a"}`,
		`{"scene":"text-to-image","prompt":"a",}`,
		`{"scene":"text-to-image","prompt":"a"}` + "\x00",
		"\ufeff" + `{"scene":"text-to-image","prompt":"a"}`,
		`{"scene":"text-to-image","prompt":"a"` + strings.Repeat(" ", 1<<19) + `}`,
	}
	for _, b := range bodies {
		before := e.credits()
		w := e.submit(e.key, b)
		after := e.credits()
		short := b
		if len(short) > 120 {
			short = short[:120]
		}
		if w.Code >= 500 {
			t.Errorf("%q: %d %s", short, w.Code, w.Body)
		}
		if w.Code != http.StatusCreated && after != before {
			t.Errorf("%q: %d charged %d", short, w.Code, before-after)
		}
		if w.Code == http.StatusCreated {
			e.key = e.user("alice", 2) // top up
			continue                   // a valid prompt would make the OpenAI endpoint wait on the manual clock
		}
		ow := e.do("POST", "/v1/images/generations", e.key, strings.Replace(strings.Replace(b, `"scene":"text-to-image",`, "", 1), `"scene":"image-to-image",`, "", 1))
		if ow.Code >= 500 {
			t.Errorf("openai %q: %d %s", short, ow.Code, ow.Body)
		}
	}
}
