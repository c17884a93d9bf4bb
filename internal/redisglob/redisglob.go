// Package redisglob quotes strings for Redis glob patterns (SCAN MATCH,
// KEYS), so a key prefix holding '*' or '[' matches only itself.
package redisglob

import "strings"

const special = `*?[]\`

// Escape quotes the characters special in a Redis glob pattern.
func Escape(s string) string {
	if !strings.ContainsAny(s, special) {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(special, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
