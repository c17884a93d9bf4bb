package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// worker -h says that -redis or -postgres is required (it shares runtime
// flags with serve, where neither keeps state in the process).
func TestWorkerHelpSaysRedisIsRequired(t *testing.T) {
	is := is.New(t)
	var stderr bytes.Buffer
	is.NoErr(run(context.Background(), []string{"worker", "-h"}, noEnv, &bytes.Buffer{}, &stderr))
	is.True(strings.Contains(stderr.String(), "(this or -postgres is required)"))
	is.True(strings.Contains(stderr.String(), "(this or -redis is required)"))
	is.True(!strings.Contains(stderr.String(), "state stays in this process"))
}
