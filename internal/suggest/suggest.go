// Package suggest finds the name someone most likely meant when they
// typed one that does not exist: a flag, a JSON field, a command.
package suggest

import (
	"slices"
	"strings"
)

// Nearest returns the name in names that typed most likely stands for,
// or "" when none is close. In order:
//   - the same name but for case, dashes and underscores (aspectRatio
//     for aspect_ratio, rate_limit for rate-limit);
//   - one name the other's prefix up to a dash or underscore (rate for
//     rate-limit, lease-time for lease);
//   - the fewest edits (insertions, deletions, substitutions), at most
//     a third of typed's length and at least 2 (promt for prompt).
//
// Ties go to the name that sorts first, so the answer never varies.
func Nearest(typed string, names []string) string {
	names = slices.Sorted(slices.Values(names))
	key := fold(typed)
	for _, n := range names {
		if fold(n) == key {
			return n
		}
	}
	best, bestDist := "", max(2, len(typed)/3)+1
	for _, n := range names {
		d := Distance(strings.ToLower(typed), strings.ToLower(n))
		if prefixAtSeparator(n, typed) || prefixAtSeparator(typed, n) {
			d = min(d, 1)
		}
		if d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// fold is s lower-cased without dashes and underscores.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' {
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// prefixAtSeparator reports whether short is long's first word(s):
// long starts with short followed by a dash or an underscore.
func prefixAtSeparator(long, short string) bool {
	rest, ok := strings.CutPrefix(strings.ToLower(long), strings.ToLower(short))
	return ok && short != "" && (strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, "_"))
}

// Distance is the Levenshtein distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
