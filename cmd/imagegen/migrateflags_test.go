package main

import (
	"bytes"
	"strings"
	"testing"
)

// migrate refuses what it would otherwise do something else for, before
// it connects: a negative -to (read as "the latest", so -to -1 meant as
// "one back" migrated up), and -down or -to with the Redis copy, which
// neither takes.
func TestMigrateRefusesFlagsItWouldIgnore(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-postgres", "postgres://u@127.0.0.1:1/db", "-to", "-2"}, "-to"},
		{[]string{"-postgres", "postgres://u@127.0.0.1:1/db", "-down", "-to", "-5"}, "-to"},
		{[]string{"-redis", "redis://127.0.0.1:1/0", "-redis-to", "redis+cluster://127.0.0.1:1", "-down"}, "-down"},
		{[]string{"-redis", "redis://127.0.0.1:1/0", "-redis-to", "redis+cluster://127.0.0.1:1", "-to", "3"}, "-to"},
	} {
		err := migrateCmd(ctx, tc.args, noEnv, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "answer") {
			t.Errorf("migrate %q: got %v, want a refusal naming %s before any connection", tc.args, err, tc.want)
		}
	}
}
