package weburl

import (
	"strings"
	"testing"
)

// Shown keeps a refused URL's secrets out of the error that names it,
// and keeps what locates it.
func TestShownHidesCredentialsQueryAndFragment(t *testing.T) {
	for raw, want := range map[string]string{
		"http://admin:hunter2@gpu.lan:7860/x": `"http://[redacted]@gpu.lan:7860/x"`,
		"http://hunter2@gpu.lan":              `"http://[redacted]@gpu.lan"`,
		"https://gpu.lan/v1?key=hunter2":      `"https://gpu.lan/v1?[redacted]"`,
		"https://gpu.lan/v1#hunter2":          `"https://gpu.lan/v1#[redacted]"`,
		"http://admin:hunter2%zz@gpu.lan":     "a value that is not one", // does not parse
		"gpu.lan:hunter2":                     "a value that is not one", // no host
		"ftp://files.example/":                `"ftp://files.example/"`,
	} {
		got := Shown(raw)
		if got != want {
			t.Errorf("Shown(%q) = %s, want %s", raw, got, want)
		}
		if strings.Contains(got, "hunter2") {
			t.Errorf("Shown(%q) = %s shows the secret", raw, got)
		}
	}
}
