package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// The commands that manage a shared store (keys, credits, inspect), run
// against Redis with a service of the test's own on the same store.

// keys list shows each key's name, creation, last use ("never" until it
// authenticates a request) and state.
func TestKeysListShowsLastUse(t *testing.T) {
	is := is.New(t)
	url, rdb, _ := testRedisURL(t)
	svc := storeService(t, rdb, imagegentest.NewModel(1))
	usedKey, used, err := svc.CreateKey(ctx, "alice", imagegen.WithKeyName("laptop"))
	is.NoErr(err)
	_, idle, err := svc.CreateKey(ctx, "alice")
	is.NoErr(err)
	_, err = svc.Authenticate(ctx, usedKey)
	is.NoErr(err)

	var stdout, stderr bytes.Buffer
	is.NoErr(run(ctx, []string{"keys", "list", "-redis", url, "-owner", "alice"}, noEnv, &stdout, &stderr))
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	is.Equal(len(lines), 3)
	is.True(regexp.MustCompile(`^ID +HINT +NAME +CREATED +LAST USED +STATE$`).MatchString(lines[0]))
	is.True(regexp.MustCompile(`^` + used.ID + ` +\S+ +laptop +\S+ +\d{4}-\d\d-\d\dT\S+ +active$`).MatchString(lines[1])) // a time
	is.True(regexp.MustCompile(`^` + idle.ID + ` +\S+ +- +\S+ +never +active$`).MatchString(lines[2]))
}

// An operator inspects and repairs a Redis store with imagegen inspect:
// stats, a list across users, one task with its ledger, a recharged
// retry, a cancel and a purge, each action logged with its reason.
func TestInspectCommands(t *testing.T) {
	is := is.New(t)
	url, rdb, _ := testRedisURL(t)
	broken := &imagegen.ModelError{Provider: "scripted", Misconfigured: true, Message: "no access"}
	svc := storeService(t, rdb, imagegentest.NewModel(2, imagegentest.Fail(broken)))
	_, err := svc.Grant(ctx, "alice", 4, "start")
	is.NoErr(err)
	_, err = svc.Grant(ctx, "bob", 2, "start")
	is.NoErr(err)
	failed, err := svc.Submit(ctx, "alice", t2i)
	is.NoErr(err)
	_, err = svc.RunOnce(ctx)
	is.NoErr(err)
	waiting, err := svc.Submit(ctx, "bob", t2i)
	is.NoErr(err)

	inspect := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		err := run(ctx, append([]string{"inspect", args[0], "-redis", url}, args[1:]...), noEnv, &stdout, &stderr)
		return stdout.String(), stderr.String(), err
	}
	out, _, err := inspect("stats")
	is.NoErr(err)
	is.True(regexp.MustCompile(`(?m)^pending +1$`).MatchString(out))
	is.True(regexp.MustCompile(`(?m)^processing +0$`).MatchString(out))

	out, _, err = inspect("list")
	is.NoErr(err)
	is.True(strings.Index(out, waiting.TaskID) < strings.Index(out, failed.TaskID)) // both users, newest first
	is.True(strings.Contains(out, "provider_error"))
	out, _, err = inspect("list", "-status", "failed", "-since", "1h")
	is.NoErr(err)
	is.True(strings.Contains(out, failed.TaskID) && !strings.Contains(out, waiting.TaskID))
	_, _, err = inspect("list", "-status", "done")
	is.True(err != nil && strings.Contains(err.Error(), "status"))

	out, _, err = inspect("show", failed.TaskID)
	is.NoErr(err)
	var d struct {
		Task struct {
			TaskID    string             `json:"task_id"`
			Owner     string             `json:"owner"`
			Attempt   int                `json:"attempt"`
			ErrorCode imagegen.ErrorCode `json:"error_code"`
			LastError string             `json:"last_error"`
		} `json:"task"`
		Ledger []struct {
			Kind      imagegen.LedgerKind `json:"kind"`
			Reference string              `json:"reference"`
		} `json:"ledger"`
	}
	is.NoErr(json.Unmarshal([]byte(out), &d))
	is.Equal(d.Task.TaskID, failed.TaskID)
	is.Equal(d.Task.Owner, "alice")
	is.Equal(d.Task.Attempt, 1)
	is.Equal(d.Task.ErrorCode, imagegen.CodeProviderError)
	is.Equal(len(d.Ledger), 2)                     // charge and refund
	is.Equal(d.Ledger[0].Reference, failed.TaskID) // as the API shows it
	// snake_case only (no Go field names), and no time that did not happen
	is.True(!regexp.MustCompile(`"[A-Z]`).MatchString(out))
	is.True(!strings.Contains(out, "0001-01-01"))
	is.True(!strings.Contains(out, `"lease_until"`) && !strings.Contains(out, `"run_after"`))
	is.True(strings.Contains(out, `"finished_at"`))

	_, _, err = inspect("retry", failed.TaskID)
	is.True(err != nil && strings.Contains(err.Error(), "-reason"))
	out, logs, err := inspect("retry", failed.TaskID, "-reason", "key rotated", "-recharge")
	is.NoErr(err)
	is.True(strings.Contains(out, "pending again"))
	is.True(strings.Contains(logs, `action=retry`) && strings.Contains(logs, `reason="key rotated"`))
	b, err := svc.Balance(ctx, "alice")
	is.NoErr(err)
	is.Equal(b, int64(2)) // recharged

	_, logs, err = inspect("cancel", waiting.TaskID, "-reason", "spam")
	is.NoErr(err)
	is.True(strings.Contains(logs, "action=cancel") && strings.Contains(logs, "reason=spam"))
	b, err = svc.Balance(ctx, "bob")
	is.NoErr(err)
	is.Equal(b, int64(2)) // refunded

	out, logs, err = inspect("purge", "-reason", "routine")
	is.NoErr(err)
	is.True(strings.Contains(out, "purged 0 expired tasks"))
	is.True(strings.Contains(logs, "reason=routine"))
}
