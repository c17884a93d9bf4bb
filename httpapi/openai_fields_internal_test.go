package httpapi

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"testing"
)

// TestOpenAIUnknownFieldsAreRefusedWithoutReadingThemAll: a body of 1 MiB
// of distinct unknown fields is refused at the first one, without a
// string and a map entry made for each (some 100,000 allocations and 18
// MiB for one request, where it now takes a handful).
func TestOpenAIUnknownFieldsAreRefusedWithoutReadingThemAll(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"prompt":"otter"`)
	for i := 0; b.Len() < MaxBodyBytes-32; i++ {
		fmt.Fprintf(&b, `,"%x":0`, i)
	}
	b.WriteString("}")
	body := b.Bytes()
	var param, code string
	allocs := testing.AllocsPerRun(3, func() {
		r := httptest.NewRequest("POST", "/v1/images/generations", bytes.NewReader(body))
		_, _, oerr := decodeOpenAIRequest(httptest.NewRecorder(), r)
		if oerr != nil && oerr.Error.Code != nil && oerr.Error.Param != nil {
			param, code = *oerr.Error.Param, *oerr.Error.Code
		}
	})
	if code != "unknown_parameter" {
		t.Fatalf("code %q (param %q), want unknown_parameter", code, param)
	}
	if allocs > 1000 {
		t.Fatalf("%v allocations to refuse the body, want a handful (not one per field)", allocs)
	}
}
