package main

import (
	"io"
	"testing"

	"github.com/matryer/is"
)

// -max-waits-per-user reaches httpapi.Config.MaxWaitsPerOwner: its
// default, a value, and 0 as no cap (negative there); a negative flag is
// refused.
func TestMaxWaitsPerUserFlag(t *testing.T) {
	is := is.New(t)
	for args, want := range map[string]int{"": 20, "5": 5, "0": -1} {
		argv := []string{}
		if args != "" {
			argv = []string{"-max-waits-per-user", args}
		}
		c, err := parseServe(argv, noEnv, io.Discard)
		is.NoErr(err)
		is.Equal(c.waitsPerUserConfig(), want)
	}
	_, err := parseServe([]string{"-max-waits-per-user", "-1"}, noEnv, io.Discard)
	is.True(err != nil)
}
