package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

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
