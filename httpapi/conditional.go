package httpapi

import (
	"net/http"
	"strings"
	"time"
)

// The conditional requests of image downloads (RFC 9110 §13), evaluated
// in the RFC's order. Images never change under their id, so each has
// one strong ETag (its SHA-256) and one Last-Modified (when its task
// ended).

// precondition is the outcome of a request's preconditions.
type precondition int

const (
	precondPass        precondition = iota // serve the image (Range may apply)
	precondFailed                          // 412 Precondition Failed
	precondNotModified                     // 304 Not Modified
)

// evalPreconditions evaluates If-Match, If-Unmodified-Since,
// If-None-Match and If-Modified-Since for a GET or HEAD of a
// representation with etag (quoted, strong; "" for none) and modified
// (zero for unknown).
func evalPreconditions(r *http.Request, etag string, modified time.Time) precondition {
	h := r.Header
	if im := h.Get("If-Match"); im != "" {
		if !matchETag(im, etag, true) {
			return precondFailed
		}
	} else if ius := h.Get("If-Unmodified-Since"); ius != "" && !modified.IsZero() {
		if t, err := http.ParseTime(ius); err == nil && modified.Truncate(time.Second).After(t) {
			return precondFailed
		}
	}
	if inm := h.Get("If-None-Match"); inm != "" {
		if matchETag(inm, etag, false) {
			return precondNotModified
		}
	} else if ims := h.Get("If-Modified-Since"); ims != "" && !modified.IsZero() {
		if t, err := http.ParseTime(ims); err == nil && !modified.Truncate(time.Second).After(t) {
			return precondNotModified
		}
	}
	return precondPass
}

// rangeApplies reports whether a Range header is to be honoured under
// If-Range: with none it is; with an entity tag only if it is etag
// (strong comparison), with a date only if it is exactly modified.
func rangeApplies(r *http.Request, etag string, modified time.Time) bool {
	ir := r.Header.Get("If-Range")
	if ir == "" {
		return true
	}
	if tag, rest, ok := scanETag(ir); ok {
		return strings.Trim(rest, " \t") == "" && strongMatch(tag, etag)
	}
	t, err := http.ParseTime(ir)
	return err == nil && !modified.IsZero() && modified.Truncate(time.Second).Equal(t)
}

// matchETag reports whether the list of an If-Match or If-None-Match
// header holds "*" or etag, compared strongly (If-Match) or weakly.
// An unreadable list matches nothing.
func matchETag(list, etag string, strong bool) bool {
	for {
		list = strings.TrimLeft(list, " \t")
		switch {
		case list == "":
			return false
		case list[0] == ',':
			list = list[1:]
			continue
		case list[0] == '*': // any current representation, with an ETag or not
			return true
		}
		tag, rest, ok := scanETag(list)
		if !ok {
			return false
		}
		if strong && strongMatch(tag, etag) || !strong && weakMatch(tag, etag) {
			return true
		}
		list = rest
	}
}

// scanETag reads one entity tag (W/"…" or "…") at the start of s and
// returns it and what follows.
func scanETag(s string) (tag, rest string, ok bool) {
	start := s
	s = strings.TrimPrefix(s, "W/")
	if len(s) < 2 || s[0] != '"' {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			n := len(start) - len(s) + i + 1
			return start[:n], start[n:], true
		case c == 0x21 || c >= 0x23 && c != 0x7f: // etagc, obs-text included
		default:
			return "", "", false
		}
	}
	return "", "", false
}

func strongMatch(a, b string) bool {
	return a == b && a != "" && !strings.HasPrefix(a, "W/")
}

func weakMatch(a, b string) bool {
	return b != "" && strings.TrimPrefix(a, "W/") == strings.TrimPrefix(b, "W/")
}
