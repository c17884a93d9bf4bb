package weburl

import "testing"

func TestAbsolute(t *testing.T) {
	for raw, want := range map[string]bool{
		"https://img.example.com":         true,
		"http://127.0.0.1:8080/base":      true,
		"img.example.com":                 false,
		"ftp://img.example.com":           false,
		"https://":                        false,
		"https://user:pw@img.example.com": false,
		"https://img.example.com?a=1":     false,
		"https://img.example.com#top":     false,
		"::":                              false,
	} {
		if got := Absolute(raw); got != want {
			t.Errorf("Absolute(%q) = %v, want %v", raw, got, want)
		}
	}
}
