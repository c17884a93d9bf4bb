package main

import (
	"fmt"
	"net"
	"strings"
)

// schemeHint is " (did you mean scheme://host:port?)" when raw is a bare
// host:port, the usual slip for a URL flag; else "". Nothing that could
// hold a password (an @) is repeated.
func schemeHint(raw, scheme string) string {
	if strings.Contains(raw, "://") || strings.ContainsAny(raw, "@ =/") {
		return ""
	}
	if _, _, err := net.SplitHostPort(raw); err != nil {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s://%s?)", scheme, raw)
}
