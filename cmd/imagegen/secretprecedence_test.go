package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// A secret given on the command line wins over the environment's
// IMAGEGEN_<NAME>_FILE as it does over IMAGEGEN_<NAME>: the file named
// in the environment of a service unit must not replace the URL an
// operator typed (migrate -down -postgres staging would drop the tables
// of the store in the file).
func TestCommandLineSecretWinsOverEnvironmentFile(t *testing.T) {
	is := is.New(t)
	write := secretFileWriter(t)
	env := map[string]string{
		"IMAGEGEN_POSTGRES_FILE":    write("pg", "postgres://app:prod-password@prod.example:5432/shop\n"),
		"IMAGEGEN_SIGNING_KEY_FILE": write("signing", "signing-key-from-the-env-file\n"),
		"IMAGEGEN_DEMO_KEY_FILE":    write("demo", "env-file-demo-key-0123456789\n"),
	}
	getenv := func(k string) string { return env[k] }

	var m migrateConfig
	is.NoErr(parseFlags(migrateFlags(&m, io.Discard), []string{"-down", "-postgres", "postgres://app@staging.example:5432/shop"}, getenv))
	is.Equal(m.url, "postgres://app@staging.example:5432/shop") // the command line's store, not the file's

	c, err := parseServe([]string{"-signing-key", "signing-key-from-the-command-line", "-demo-key", "cli-demo-key-0123456789"}, getenv, io.Discard)
	is.NoErr(err)
	is.Equal(c.signingKey, "signing-key-from-the-command-line")
	is.Equal([]string(c.demoKeys), []string{"cli-demo-key-0123456789"}) // no demo user from the file
}

// Both IMAGEGEN_<NAME> and IMAGEGEN_<NAME>_FILE set, or both -<name> and
// -<name>-file given, is refused, naming both and neither value: which
// one won depended on the flags' alphabetical order (the file), and a
// repeatable flag took the values of both.
func TestSecretGivenTwoWaysIsRefused(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "signing")
	is.NoErr(os.WriteFile(file, []byte("signing-key-from-the-file-0123\n"), 0o600))
	env := map[string]string{"IMAGEGEN_SIGNING_KEY": "signing-key-from-the-env-0123", "IMAGEGEN_SIGNING_KEY_FILE": file}
	_, err := parseServe(nil, func(k string) string { return env[k] }, io.Discard)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "IMAGEGEN_SIGNING_KEY_FILE"))
	is.True(!strings.Contains(err.Error(), "from-the-env")) // no value shown

	_, err = parseServe([]string{"-signing-key", "signing-key-from-the-command-line", "-signing-key-file", file}, noEnv, io.Discard)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "-signing-key-file"))
	is.True(!strings.Contains(err.Error(), "from-the-command-line"))
}
