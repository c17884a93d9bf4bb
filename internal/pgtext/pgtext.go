// Package pgtext says which strings PostgreSQL's text keeps.
package pgtext

import (
	"strings"
	"unicode/utf8"
)

// Storable reports whether PostgreSQL's text (and so every store) can
// keep s: valid UTF-8 without U+0000. PostgreSQL refuses anything else
// as a statement's argument with an error (SQLSTATE 22021), which for a
// caller's value is a server error for the caller's mistake.
func Storable(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}
