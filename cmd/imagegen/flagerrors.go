package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/imagegen/imagegen/internal/suggest"
)

// parseArgs parses args into fs. -h prints the whole usage (to fs's
// output) and returns flag.ErrHelp; any other mistake is a short error
// that names the nearest flag and points at -h, instead of the flag
// package's message followed by every flag's help.
func parseArgs(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // the flag package calls it on every mistake
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		printUsage(fs)
		return err
	}
	return &userError{msg: explainFlagError(fs, err.Error()) + "\n" + helpHint(fs), err: err}
}

// printUsage prints fs's usage as the flag package does on -h.
func printUsage(fs *flag.FlagSet) {
	if fs.Usage != nil {
		fs.Usage()
		return
	}
	fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name())
	fs.PrintDefaults()
}

// helpHint is the line that follows a flag mistake.
func helpHint(fs *flag.FlagSet) string {
	return fmt.Sprintf(`run "imagegen %s -h" to list every flag`, fs.Name())
}

var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	invalidValue  = regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-([^:]+): (parse error|value out of range)$`)
)

// explainFlagError rewrites the flag package's message msg in the
// user's terms: an unknown flag names the nearest one, a bad number or
// duration says what was expected.
func explainFlagError(fs *flag.FlagSet, msg string) string {
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		s := fmt.Sprintf("%s: unknown flag -%s", fs.Name(), m[1])
		if near := nearestFlag(fs, m[1]); near != "" {
			s += fmt.Sprintf(" (did you mean -%s?)", near)
		} else if isKeyFlag(m[1]) && fs.Lookup("server") != nil {
			s += fmt.Sprintf(" (the API key is read from %s only, so that it does not show in ps)", envAPIKey)
		}
		return s
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[2]); f != nil {
			return fmt.Sprintf("%s: -%s %s: want %s", fs.Name(), m[2], m[1], expectedValue(f.Value))
		}
	}
	return fs.Name() + ": " + msg
}

// expectedValue describes what a flag of a built-in type accepts.
func expectedValue(v flag.Value) string {
	g, ok := v.(flag.Getter)
	if !ok {
		return "a valid value"
	}
	switch g.Get().(type) {
	case bool:
		return "true or false"
	case int, int64:
		return "a whole number"
	case uint, uint64:
		return "a whole number, 0 or more"
	case float64:
		return "a number"
	case time.Duration:
		return "a duration such as 90s, 5m or 1h30m"
	}
	return "a valid value"
}

// flagSynonyms are names people try for a flag, from other tools, and
// the flags that mean that here (the first that fs has is suggested).
var flagSynonyms = map[string][]string{
	"port": {"addr"}, "listen": {"addr"}, "listen-addr": {"addr"}, "bind": {"addr"}, "host": {"addr", "server"},
	"address": {"addr"}, "http-addr": {"addr"}, "url": {"server", "public-url"}, "base-url": {"public-url", "server"},
	"redis-url": {"redis"}, "redis-addr": {"redis"}, "database": {"postgres"}, "database-url": {"postgres"},
	"db": {"postgres"}, "dsn": {"postgres"}, "pg": {"postgres"}, "postgresql": {"postgres"}, "postgres-url": {"postgres"},
	"concurrency": {"workers"}, "threads": {"workers"}, "parallel": {"workers"}, "verbose": {"log-level"},
	"debug": {"log-level"}, "v": {"log-level"}, "log": {"log-level", "log-format"}, "output": {"o"}, "out": {"o"},
	"aspect-ratio": {"aspect"}, "ratio": {"aspect"}, "user": {"owner"}, "user-id": {"owner"}, "credits": {"demo-credits", "amount"},
	"rate": {"rate-limit"}, "ratelimit": {"rate-limit"}, "key": {"demo-key", "id"}, "api-key": {"demo-key"},
	"metrics": {"admin-addr"}, "metrics-addr": {"admin-addr"}, "images": {"blobs"}, "storage": {"blobs"}, "bucket": {"blobs"},
	"ttl": {"retention"}, "timeout": {"shutdown-timeout"}, "openai": {"openai-prefix"}, "operators": {"operator"},
}

// isKeyFlag reports a flag name someone would try for an API key.
func isKeyFlag(name string) bool {
	switch strings.ToLower(strings.ReplaceAll(name, "_", "-")) {
	case "key", "api-key", "apikey", "token", "api-token":
		return true
	}
	return false
}

// nearestFlag returns the flag of fs that someone who typed name most
// likely meant, or "" when none is close.
func nearestFlag(fs *flag.FlagSet, name string) string {
	name, _, _ = strings.Cut(name, "=")
	for _, s := range flagSynonyms[strings.ToLower(name)] {
		if fs.Lookup(s) != nil {
			return s
		}
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return suggest.Nearest(name, names)
}
