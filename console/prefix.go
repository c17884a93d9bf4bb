package console

import (
	"path"
	"strings"
)

// cleanPrefix reports whether p can be Config.Prefix: an absolute, clean
// path (no dot segments, no doubled or trailing slash but a lone one)
// that the mux takes as a path and a browser as one on this site. The
// console redirects to paths under it, and a browser reads "//host" and
// "/\host" as another site's address, so those are refused (the mux
// would also refuse "//host" in its patterns, with a panic); so are the
// characters the mux reads as pattern syntax ("{}") and those that end a
// path or a pattern ("?", "#", space), and control characters.
func cleanPrefix(p string) bool {
	trimmed := strings.TrimSuffix(p, "/")
	switch {
	case !strings.HasPrefix(p, "/"), strings.HasPrefix(p, "//"):
		return false
	case strings.ContainsAny(p, "{}?# \\"), strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return false
	case trimmed == "":
		return true // "/": the console at the root
	}
	return path.Clean(trimmed) == trimmed
}
