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

// keys, credits and tasks -h print their subcommands and succeed; a
// missing or unknown subcommand prints them and fails.
func TestGroupHelpListsSubcommands(t *testing.T) {
	for group, subs := range map[string][]string{
		"keys":    {"create", "list", "revoke"},
		"credits": {"grant", "show"},
		"tasks":   {"get"},
		"inspect": {"stats", "list", "show", "retry", "cancel", "purge"},
	} {
		t.Run(group, func(t *testing.T) {
			is := is.New(t)
			var stdout, stderr bytes.Buffer
			is.NoErr(run(context.Background(), []string{group, "-h"}, noEnv, &stdout, &stderr))
			for _, sub := range subs {
				is.True(strings.Contains(stdout.String(), "  "+sub)) // each subcommand is listed
			}
			stdout.Reset()
			err := run(context.Background(), []string{group}, noEnv, &stdout, &stderr)
			is.True(err != nil)
			is.True(strings.Contains(stderr.String(), "  "+subs[0]))
			stderr.Reset()
			err = run(context.Background(), []string{group, "nope"}, noEnv, &stdout, &stderr)
			is.True(err != nil && strings.Contains(err.Error(), `"nope"`))
			is.True(strings.Contains(stderr.String(), "  "+subs[0]))
		})
	}
}

// Bad flags are refused with one clear line, before any connection, and
// a password in a -redis URL is never repeated.
func TestAdminFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"credits", "grant", "-redis", "redis://127.0.0.1:1/0", "-owner", "a", "-amount", "5"}, "-ref is required"},
		{[]string{"keys", "list", "-redis", "redis://:hunter2secret@[bad", "-owner", "a"}, "-redis must be a URL like redis://"},
		{[]string{"keys", "list", "-redis", "notaurl", "-owner", "a"}, "-redis must be a URL like redis://"},
		{[]string{"serve", "-public-url", "img.example.com"}, "-public-url must be an absolute http(s) URL"},
		{[]string{"serve", "-public-url", "ftp://img.example.com"}, "-public-url must be an absolute http(s) URL"},
		{[]string{"serve", "-pprof"}, "-pprof needs -admin-addr"},
		{[]string{"serve", "-log-format", "xml"}, "-log-format must be text or json"},
		{[]string{"worker", "-log-level", "loud"}, "-log-level must be debug, info, warn or error"},
		{[]string{"inspect", "list", "-redis", "redis://127.0.0.1:1/0", "-since", "yesterday"}, "-since \"yesterday\": want an RFC 3339 time"},
		{[]string{"inspect", "purge", "-redis", "redis://127.0.0.1:1/0"}, "inspect purge needs -reason"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			is := is.New(t)
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, noEnv, &stdout, &stderr)
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tc.want))
			is.True(!strings.Contains(err.Error()+stderr.String()+stdout.String(), "hunter2secret"))
		})
	}
}
