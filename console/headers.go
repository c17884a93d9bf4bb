package console

import (
	"net/http"
	"net/url"
	"strings"
)

// contentSecurityPolicy allows only the console's own script, style and
// images (plus the image origins given), no inline code, no framing, and
// forms posting only back to the console's origin.
func contentSecurityPolicy(imageOrigins []string) string {
	img := strings.Join(append([]string{"'self'"}, imageOrigins...), " ")
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src " + img +
		"; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// setSecurityHeaders sets the headers every console response carries.
func setSecurityHeaders(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// validOrigin reports whether o is scheme://host[:port] and nothing more.
func validOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.Path == "" && u.RawQuery == "" && u.Fragment == "" && u.User == nil && !strings.ContainsAny(o, " ;'")
}
