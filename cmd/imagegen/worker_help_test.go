package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// worker -h says that -redis is required (it shares runtime flags with
// serve, where an empty -redis keeps state in the process).
func TestWorkerHelpSaysRedisIsRequired(t *testing.T) {
	is := is.New(t)
	var stderr bytes.Buffer
	is.NoErr(run(context.Background(), []string{"worker", "-h"}, noEnv, &bytes.Buffer{}, &stderr))
	is.True(strings.Contains(stderr.String(), "(required)"))
	is.True(!strings.Contains(stderr.String(), "empty keeps state in this process"))
}
