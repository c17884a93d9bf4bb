package redisglob_test

import (
	"testing"

	"github.com/imagegen/imagegen/internal/redisglob"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain":      "plain",
		"{img}:blob": "{img}:blob",
		"a*b?c":      `a\*b\?c`,
		`[x]\`:       `\[x\]\\`,
	} {
		if got := redisglob.Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}
