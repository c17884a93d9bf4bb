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

// TestServeSecretsFromFiles: the secrets of serve can come from files
// (and the environment), so they need not appear in ps.
func TestServeSecretsFromFiles(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		is.NoErr(os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	signing := write("signing", "signing-secret-0123456789\n")
	demo := write("demo", "a-key-of-sixteen-chars\n\nb-key-of-sixteen-chars\n")
	redisURL := write("redis", "redis://:hunter2hunter2@127.0.0.1:6379/10\n")
	env := map[string]string{"IMAGEGEN_SIGNING_KEY": "env-loses-to-the-file-flag", "IMAGEGEN_REDIS_FILE": redisURL}
	c, err := parseServe([]string{"-signing-key-file", signing, "-demo-key-file", demo}, func(k string) string { return env[k] }, io.Discard)
	is.NoErr(err)
	is.Equal(c.signingKey, "signing-secret-0123456789")
	is.Equal([]string(c.demoKeys), []string{"a-key-of-sixteen-chars", "b-key-of-sixteen-chars"})
	is.Equal(c.redisURL, "redis://:hunter2hunter2@127.0.0.1:6379/10")

	_, err = parseServe([]string{"-signing-key-file", filepath.Join(dir, "missing")}, func(string) string { return "" }, io.Discard)
	is.True(err != nil)
	_, err = parseServe([]string{"-signing-key-file", write("empty", "\n")}, func(string) string { return "" }, io.Discard)
	is.True(err != nil)
	_, err = parseServe([]string{"-signing-key-file", write("short", "short\n")}, func(string) string { return "" }, io.Discard)
	is.True(err != nil) // the same checks as the flag

	// -h says where else each secret can come from.
	var help bytes.Buffer
	_, _ = parseServe([]string{"-h"}, func(string) string { return "" }, &help)
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
	_, err = parseServe([]string{"-trusted-proxy", "not-a-cidr"}, func(string) string { return "" }, io.Discard)
	is.True(err != nil)
}
