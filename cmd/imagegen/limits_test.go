package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/placeholder"
)

// Bad scheduler flags are refused before anything runs, with an error
// that names the flag.
func TestBadLimitFlagsNameTheFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		flag string
	}{
		{[]string{"-model-concurrency", "foo"}, "-model-concurrency"},
		{[]string{"-model-concurrency", "=0"}, "-model-concurrency"},
		{[]string{"-model-concurrency", "placeholder=0"}, "-model-concurrency"},
		{[]string{"-model-concurrency", "placeholder=-2"}, "-model-concurrency"},
		{[]string{"-model-concurrency", "comfyui=2"}, "-model-concurrency"}, // not a model this process runs
		{[]string{"-model-rate", "placeholder=5"}, "-model-rate"},
		{[]string{"-model-rate", "placeholder=x/m"}, "-model-rate"},
		{[]string{"-model-rate", "nothere=5/m"}, "-model-rate"},
		{[]string{"-owner-concurrency", "-1"}, "-owner-concurrency"},
		{[]string{"-max-pending", "-3"}, "-max-pending"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			is := is.New(t)
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0"}, tt.args...), noEnv, &stdout, &stderr)
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tt.flag))
		})
	}
}

func TestModelLimitsUseTheTasksModelNames(t *testing.T) {
	is := is.New(t)
	c := limitFlags{ownerConcurrency: 2, modelConcurrency: "placeholder=1", modelRate: "placeholder=30/m"}
	m, err := placeholder.New(placeholder.Config{})
	is.NoErr(err)
	l, err := c.limits("placeholder", m)
	is.NoErr(err)
	is.Equal(l.OwnerConcurrency, 2)
	is.Equal(l.ModelConcurrency, map[string]int{"placeholder": 1})
	is.Equal(l.ModelRate, map[string]int{"placeholder": 30})
	is.Equal(limitFlags{maxPending: 0}.maxPendingConfig(), -1) // 0 is no cap
}
