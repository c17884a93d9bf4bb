package weburl

import (
	"path"
	"strings"
)

// PathPrefix reports whether p can be where an operator mounts a set of
// routes (the API's prefix, the OpenAI-compatible one, the console's),
// given without its trailing slash: an absolute, clean path below the
// root ("/api/v1"), with no empty or dot segment, which net/http's mux
// refuses in its patterns (with a panic) and no request's path has. It
// holds nothing that the mux reads as pattern syntax (a brace, white
// space after a method), nothing that ends a path ("?", "#"), no control
// character, and no backslash: links and redirects start with the
// prefix, and a browser takes "/\host", as it takes "//host", for
// another site's address.
func PathPrefix(p string) bool {
	return len(p) > 1 && p[0] == '/' && path.Clean(p) == p &&
		!strings.ContainsFunc(p, func(r rune) bool {
			return r <= ' ' || r == 0x7f || strings.ContainsRune(`{}?#\`, r)
		})
}
