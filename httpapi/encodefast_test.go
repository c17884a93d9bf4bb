package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// viaJSON is what encode wrote before appendFast: the encoder's bytes.
func viaJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// encoded is what encode writes for v.
func encoded[T any](v T) string {
	w := httptest.NewRecorder()
	encode(w, 200, v)
	return w.Body.String()
}

var fastStrings = []string{"", "0b6e8f3c-6d2a-4c1e-9f4b-2a7d5e8c1f30", "pending", `q"uote`, `back\slash`, "tab\t", "\x7f", "<&>",
	"https://img.example.com/api/v1/images/x?expires=1&sig=a", "naïve", "\u2028", "\xff", "日本"}

func TestFastAnswersAreTheEncodersBytes(t *testing.T) {
	for _, s := range fastStrings {
		for _, body := range []wire.TaskBody{
			{TaskID: s, Status: imagegen.Status(s)},
			{TaskID: "t", Status: imagegen.StatusSuccess, Images: []string{s, "https://a/b?c=d&e=f"}},
			{TaskID: "t", Status: imagegen.StatusSuccess, Images: []string{}},
			{TaskID: "t", Status: imagegen.StatusFailed, Error: s, ErrorCode: imagegen.ErrorCode(s)},
			{TaskID: s, Status: imagegen.StatusPending, TaskDetails: &wire.TaskDetails{Model: s}},
		} {
			if got, want := encoded(body), viaJSON(t, body); got != want {
				t.Errorf("task body %+v: wrote %q, want %q", body, got, want)
			}
		}
		for _, sub := range []wire.Submitted{
			{TaskID: s, Status: imagegen.Status(s), CreditsUsed: 3, CreditsRemaining: -9223372036854775808},
			{TaskID: s, Status: imagegen.StatusPending},
		} {
			if got, want := encoded(sub), viaJSON(t, sub); got != want {
				t.Errorf("submitted %+v: wrote %q, want %q", sub, got, want)
			}
		}
	}
}

func FuzzFastTaskBody(f *testing.F) {
	for _, s := range fastStrings {
		f.Add(s, s, s)
	}
	f.Fuzz(func(t *testing.T, id, status, image string) {
		body := wire.TaskBody{TaskID: id, Status: imagegen.Status(status), Images: []string{image}, Error: status, ErrorCode: imagegen.ErrorCode(id)}
		if got, want := encoded(body), viaJSON(t, body); got != want {
			t.Fatalf("wrote %q, want %q", got, want)
		}
	})
}

// A poll's answer is written without an allocation (into the encoder's
// buffer).
func TestFastAnswerAllocations(t *testing.T) {
	body := wire.TaskBody{TaskID: "0b6e8f3c-6d2a-4c1e-9f4b-2a7d5e8c1f30", Status: imagegen.StatusPending}
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := appendFast(buf[:0], &body); !ok {
			t.Fatal("a pending task's answer was not written by appendFast")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per answer", n)
	}
}
