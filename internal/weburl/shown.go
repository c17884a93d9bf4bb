package weburl

import (
	"fmt"
	"net/url"
	"strings"
)

// Redacted stands in for the parts of a URL that Shown leaves out.
const Redacted = "[redacted]"

// Shown is a configured URL as an error that refuses it may quote it,
// to the operator's logs: its credentials (a user:password, a token as
// user name), query and fragment, which may hold secrets, are replaced by
// Redacted; a value that does not parse, or names no host, is not shown
// at all (url.Parse's own error quotes the whole text).
func Shown(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "a value that is not one"
	}
	s := *u
	s.User, s.RawQuery, s.Fragment, s.RawFragment, s.ForceQuery = nil, "", "", "", false
	shown := s.String()
	if u.User != nil {
		shown = strings.Replace(shown, "//", "//"+Redacted+"@", 1)
	}
	if u.RawQuery != "" || u.ForceQuery {
		shown += "?" + Redacted
	}
	if u.Fragment != "" || u.RawFragment != "" {
		shown += "#" + Redacted
	}
	return fmt.Sprintf("%q", shown)
}
