package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/imagegentest"
)

// inspect list's table shows what the host app and the providers wrote
// (an owner id, a task's last error) as data: a control character in it
// (an escape sequence that rewrites the operator's terminal, a newline
// or a tab that forges a row or a column) is shown escaped.
func TestInspectListEscapesControlCharacters(t *testing.T) {
	is := is.New(t)
	url, rdb, _ := testRedisURL(t)
	svc := storeService(t, rdb, imagegentest.NewModel(1))
	const owner = "mallory\x1b[2J\n0000\tforged\trow"
	_, err := svc.Grant(ctx, owner, 1, "start")
	is.NoErr(err)
	_, err = svc.Submit(ctx, owner, t2i)
	is.NoErr(err)

	var stdout bytes.Buffer
	is.NoErr(run(ctx, []string{"inspect", "list", "-redis", url}, noEnv, &stdout, &bytes.Buffer{}))
	out := stdout.String()
	if strings.ContainsAny(out, "\x1b\t") || strings.Count(out, "\n") != 2 {
		t.Errorf("inspect list printed a control character as is:\n%q", out)
	}
	is.True(strings.Contains(out, `mallory\x1b[2J\n0000\tforged\trow`)) // shown, escaped
}
