package suggest_test

import (
	"fmt"
	"testing"

	"github.com/imagegen/imagegen/internal/suggest"
)

func TestNearest(t *testing.T) {
	fields := []string{"scene", "prompt", "aspect_ratio", "image_input", "callback_url", "seed", "callback_events"}
	flags := []string{"addr", "rate-limit", "workers", "lease", "log-level", "log-format", "redis"}
	for _, tt := range []struct {
		typed string
		names []string
		want  string
	}{
		{"aspectRatio", fields, "aspect_ratio"},
		{"AspectRatio", fields, "aspect_ratio"},
		{"aspect-ratio", fields, "aspect_ratio"},
		{"Prompt", fields, "prompt"},
		{"promt", fields, "prompt"},
		{"callbackURL", fields, "callback_url"},
		{"image", fields, "image_input"},
		{"model", fields, ""},
		{"cost", fields, ""},
		{"rate_limit", flags, "rate-limit"},
		{"rate", flags, "rate-limit"},
		{"worker", flags, "workers"},
		{"lease-time", flags, "lease"},
		{"port", flags, ""},
		{"", flags, ""},
	} {
		if got := suggest.Nearest(tt.typed, tt.names); got != tt.want {
			t.Errorf("Nearest(%q) = %q, want %q", tt.typed, got, tt.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"promt", "prompt", 1}, {"abc", "abc", 0}} {
		if got := suggest.Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func ExampleNearest() {
	fields := []string{"scene", "prompt", "aspect_ratio", "seed"}
	fmt.Println(suggest.Nearest("aspectRatio", fields))
	fmt.Println(suggest.Nearest("promt", fields))
	fmt.Printf("%q\n", suggest.Nearest("model", fields))
	// Output:
	// aspect_ratio
	// prompt
	// ""
}
