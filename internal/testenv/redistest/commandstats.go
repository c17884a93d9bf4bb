package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// ScriptCalls reads from INFO commandstats how many times each command
// ran since the server's last CONFIG RESETSTAT, leaving out the script
// runs themselves (EVAL, EVALSHA) and the test's own CONFIG and INFO:
// on a server of the test's own (StartServer), the commands its
// scripts called.
func ScriptCalls(t testing.TB, rdb *goredis.Client) map[string]int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found || strings.HasPrefix(name, "eval") || strings.HasPrefix(name, "config") || name == "info" {
			continue
		}
		n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		calls[name] = n
	}
	return calls
}
