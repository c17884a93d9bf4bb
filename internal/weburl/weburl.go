// Package weburl checks the base URLs an operator configures (public URL,
// image base URL).
package weburl

import "net/url"

// Absolute reports whether raw is an absolute http(s) URL with a host and
// no credentials, query or fragment: one that paths can be appended to.
func Absolute(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil && u.RawQuery == "" && u.Fragment == ""
}
