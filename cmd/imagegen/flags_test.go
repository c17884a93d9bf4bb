package main

import (
	"bytes"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// The command line: help, flag errors, and flags set from files and the
// environment.

func TestRunUsage(t *testing.T) {
	is := is.New(t)
	var out, errOut bytes.Buffer
	is.True(run(ctx, nil, noEnv, &out, &errOut) != nil)
	is.True(run(ctx, []string{"bogus"}, noEnv, &out, &errOut) != nil)
	is.NoErr(run(ctx, []string{"help"}, noEnv, &out, &errOut))
	is.True(strings.Contains(out.String(), "serve"))
}

func TestRunUsageListsClientCommands(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	is.NoErr(run(ctx, []string{"help"}, noEnv, &out, &out))
	is.True(strings.Contains(out.String(), "imagegen generate -prompt TEXT"))
	is.True(strings.Contains(out.String(), "imagegen tasks get"))
	is.True(strings.Contains(out.String(), envAPIKey))
}

// worker -h says that -redis or -postgres is required (it shares runtime
// flags with serve, where neither keeps state in the process), and keeps
// the note that they are secrets.
func TestWorkerHelpSaysRedisIsRequired(t *testing.T) {
	is := is.New(t)
	var stderr bytes.Buffer
	is.NoErr(run(ctx, []string{"worker", "-h"}, noEnv, &bytes.Buffer{}, &stderr))
	help := stderr.String()
	for _, flag := range []string{"-redis string", "-postgres string"} {
		// the flag's own line of help names the requirement, and that
		// it is a secret best given from a file or the environment
		usage := help[strings.Index(help, flag):]
		usage = usage[:strings.Index(usage[len(flag)+1:], "\n  -")+len(flag)+1]
		is.True(strings.Contains(usage, "(one of -redis and -postgres is required)"))
		is.True(strings.Contains(usage, "a secret"))
	}
	is.True(!strings.Contains(help, "state stays in this process"))
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
			is.NoErr(run(ctx, []string{group, "-h"}, noEnv, &stdout, &stderr))
			for _, sub := range subs {
				is.True(strings.Contains(stdout.String(), "  "+sub)) // each subcommand is listed
			}
			stdout.Reset()
			err := run(ctx, []string{group}, noEnv, &stdout, &stderr)
			is.True(err != nil)
			is.True(strings.Contains(stderr.String(), "  "+subs[0]))
			stderr.Reset()
			err = run(ctx, []string{group, "nope"}, noEnv, &stdout, &stderr)
			is.True(err != nil && strings.Contains(err.Error(), `"nope"`))
			is.True(strings.Contains(err.Error(), subs[0])) // the commands, in the error's two lines
			is.Equal(stderr.String(), "")                   // not the usage
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
		{[]string{"keys", "list", "-redis", "redis://:hunter2secret@[bad", "-owner", "a"}, "-redis: not a Redis URL (redis://"},
		{[]string{"keys", "list", "-redis", "notaurl", "-owner", "a"}, "-redis: unknown Redis URL scheme \"\": want redis://"},
		{[]string{"credits", "show", "-redis", "redis+sentinel://:hunter2secret@127.0.0.1:1/0", "-owner", "a"}, "-redis: redis URL: a redis+sentinel URL needs master=NAME"},
		{[]string{"inspect", "list", "-redis", "redis+cluster://:hunter2secret@127.0.0.1:1?addr=x"}, "-redis: redis URL:"},
		{[]string{"serve", "-public-url", "img.example.com"}, "-public-url must be an absolute http(s) URL"},
		{[]string{"serve", "-public-url", "ftp://img.example.com"}, "-public-url must be an absolute http(s) URL"},
		{[]string{"serve", "-pprof"}, "-pprof needs -admin-addr"},
		{[]string{"serve", "-redis-wait-replicas", "1"}, "-redis-wait-replicas needs -redis"},
		{[]string{"migrate", "-redis", "redis://:hunter2secret@127.0.0.1:1/0"}, "-redis and -redis-to go together"},
		{[]string{"migrate", "-redis", "redis://127.0.0.1:1/0", "-redis-to", "notaurl"}, "-redis-to: unknown Redis URL scheme"},
		{[]string{"worker", "-redis", "redis://127.0.0.1:1/0", "-redis-wait-replicas", "-1"}, "-redis-wait-replicas must not be negative"},
		{[]string{"serve", "-log-format", "xml"}, "-log-format must be text or json"},
		{[]string{"serve", "-log-flush", "-1s"}, "-log-flush must not be negative"},
		{[]string{"worker", "-redis", "redis://127.0.0.1:1/0", "-gc-floor", "-1"}, "-gc-floor must be 0 to 1048576 (MiB)"},
		{[]string{"serve", "-placeholder-size", "8"}, "-placeholder-size must be 16 to 4096"},
		{[]string{"worker", "-log-level", "loud"}, "-log-level must be debug, info, warn or error"},
		{[]string{"inspect", "list", "-redis", "redis://127.0.0.1:1/0", "-since", "yesterday"}, "-since \"yesterday\": want an RFC 3339 time"},
		{[]string{"inspect", "purge", "-redis", "redis://127.0.0.1:1/0"}, "inspect purge needs -reason"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			is := is.New(t)
			var stdout, stderr bytes.Buffer
			err := run(ctx, tc.args, noEnv, &stdout, &stderr)
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tc.want))
			is.True(!strings.Contains(err.Error()+stderr.String()+stdout.String(), "hunter2secret"))
		})
	}
}

// TestServeSecretsFromFiles: the secrets of serve can come from files
// (and the environment), so they need not appear in ps.
func TestServeSecretsFromFiles(t *testing.T) {
	is := is.New(t)
	write := secretFileWriter(t)
	signing := write("signing", "signing-secret-0123456789\n")
	demo := write("demo", "a-key-of-sixteen-chars\n\nb-key-of-sixteen-chars\n")
	redisURL := write("redis", "redis://:hunter2hunter2@127.0.0.1:6379/10\n")
	env := map[string]string{"IMAGEGEN_SIGNING_KEY": "env-loses-to-the-file-flag", "IMAGEGEN_REDIS_FILE": redisURL}
	c, err := parseServe([]string{"-signing-key-file", signing, "-demo-key-file", demo}, func(k string) string { return env[k] }, io.Discard)
	is.NoErr(err)
	is.Equal(c.signingKey, "signing-secret-0123456789")
	is.Equal([]string(c.demoKeys), []string{"a-key-of-sixteen-chars", "b-key-of-sixteen-chars"})
	is.Equal(c.redisURL, "redis://:hunter2hunter2@127.0.0.1:6379/10")

	_, err = parseServe([]string{"-signing-key-file", filepath.Join(t.TempDir(), "missing")}, noEnv, io.Discard)
	is.True(err != nil)
	_, err = parseServe([]string{"-signing-key-file", write("empty", "\n")}, noEnv, io.Discard)
	is.True(err != nil)
	_, err = parseServe([]string{"-signing-key-file", write("short", "short\n")}, noEnv, io.Discard)
	is.True(err != nil) // the same checks as the flag

	// -h says where else each secret can come from.
	var help bytes.Buffer
	_, _ = parseServe([]string{"-h"}, noEnv, &help)
	for _, name := range []string{"IMAGEGEN_SIGNING_KEY", "-signing-key-file", "IMAGEGEN_DEMO_KEY", "-demo-key-file", "IMAGEGEN_REDIS", "-redis-file"} {
		is.True(strings.Contains(help.String(), name))
	}
}

func TestServeTrustedProxyFlag(t *testing.T) {
	is := is.New(t)
	env := map[string]string{"IMAGEGEN_TRUSTED_PROXY": "192.168.0.0/16"}
	c, err := parseServe([]string{"-trusted-proxy", "10.0.0.0/8", "-trusted-proxy", "2001:db8::1"}, func(k string) string { return env[k] }, io.Discard)
	is.NoErr(err)
	is.Equal([]netip.Prefix(c.trustedProxies), []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::1/128")})
	c, err = parseServe(nil, func(k string) string { return env[k] }, io.Discard)
	is.NoErr(err)
	is.Equal([]netip.Prefix(c.trustedProxies), []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")})
	_, err = parseServe([]string{"-trusted-proxy", "not-a-cidr"}, noEnv, io.Discard)
	is.True(err != nil)

	// An IPv4 range written IPv4-mapped, as dual-stack listeners' logs show
	// IPv4 peers, is that IPv4 range: peers are compared unmapped, and a
	// mapped prefix contains none of them (its proxy's connections were
	// bounded as one client's, every client behind it sharing the bound).
	c, err = parseServe([]string{"-trusted-proxy", "::ffff:203.0.113.0/120", "-trusted-proxy", "::ffff:198.51.100.9"}, noEnv, io.Discard)
	is.NoErr(err)
	is.Equal([]netip.Prefix(c.trustedProxies), []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("198.51.100.9/32")})
	is.True(unbounded(netip.MustParseAddr("203.0.113.7"), c.trustedProxies))
}

// An empty IMAGEGEN_* variable counts as not set (docs/configuration.md
// says so): the flag keeps its default, where a value sets it; an empty
// value is given with the flag itself.
func TestEmptyEnvironmentVariableCountsAsUnset(t *testing.T) {
	is := is.New(t)
	for _, tc := range []struct{ env, want string }{{"", "/v1"}, {"/openai", "/openai"}} {
		fs := newFlagSet("test", &bytes.Buffer{})
		prefix := fs.String("openai-prefix", "/v1", "")
		is.NoErr(envDefaults(fs, func(k string) string {
			if k == "IMAGEGEN_OPENAI_PREFIX" {
				return tc.env
			}
			return ""
		}))
		is.Equal(*prefix, tc.want)
	}
}

// secretFileWriter returns a func that writes text to the file name in
// a directory of the test's own, readable by its owner only, as a
// secret's file is, and returns its path.
func secretFileWriter(t *testing.T) func(name, text string) string {
	dir := t.TempDir()
	return func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
}
