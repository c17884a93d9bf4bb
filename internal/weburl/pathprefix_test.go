package weburl

import "testing"

func TestPathPrefix(t *testing.T) {
	for p, want := range map[string]bool{
		"/api/v1":        true,
		"/v1":            true,
		"/console":       true,
		"/a-b_c.d~e":     true,
		"":               false, // the root is the caller's to allow
		"/":              false, // what "//" leaves once its trailing slash is cut
		"console":        false,
		"//evil.example": false,
		`/\evil.example`: false,
		"/a//b":          false,
		"/a/../b":        false,
		"/a/./b":         false,
		"/a/":            false,
		"/a b":           false,
		"/a\tb":          false,
		"/a\nb":          false,
		"/a\x7fb":        false,
		"/{v}":           false,
		"/a}":            false,
		"/a?b":           false,
		"/a#b":           false,
	} {
		if got := PathPrefix(p); got != want {
			t.Errorf("PathPrefix(%q) = %v, want %v", p, got, want)
		}
	}
}
