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

// flagSynonyms returns, for a name people try for a flag (from other
// tools), the flags that mean that here; the first that a command has is
// suggested.
func flagSynonyms(name string) []string {
	switch name {
	case "port", "listen", "listen-addr", "bind", "address", "http-addr":
		return []string{"addr"}
	case "host":
		return []string{"addr", "server"}
	case "url":
		return []string{"server", "public-url"}
	case "base-url":
		return []string{"public-url", "server"}
	case "redis-url", "redis-addr":
		return []string{"redis"}
	case "database", "database-url", "db", "dsn", "pg", "postgresql", "postgres-url":
		return []string{"postgres"}
	case "concurrency", "threads", "parallel":
		return []string{"workers"}
	case "verbose", "debug", "v":
		return []string{"log-level"}
	case "log":
		return []string{"log-level", "log-format"}
	case "output", "out":
		return []string{"o"}
	case "aspect-ratio", "ratio":
		return []string{"aspect"}
	case "user", "user-id":
		return []string{"owner"}
	case "credits":
		return []string{"demo-credits", "amount"}
	case "rate", "ratelimit":
		return []string{"rate-limit"}
	case "key":
		return []string{"demo-key", "id"}
	case "api-key":
		return []string{"demo-key"}
	case "metrics", "metrics-addr":
		return []string{"admin-addr"}
	case "images", "storage", "bucket":
		return []string{"blobs"}
	case "ttl":
		return []string{"retention"}
	case "timeout":
		return []string{"shutdown-timeout"}
	case "openai":
		return []string{"openai-prefix"}
	case "operators":
		return []string{"operator"}
	}
	return nil
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
	for _, s := range flagSynonyms(strings.ToLower(name)) {
		if fs.Lookup(s) != nil {
			return s
		}
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return suggest.Nearest(name, names)
}
