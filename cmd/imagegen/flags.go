package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/imagegen/imagegen/internal/netprefix"
)

// newFlagSet is the flag set of command name; it reports to stderr and
// returns its errors (flag.ErrHelp for -h) rather than exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args into fs, a command that takes no arguments, then
// sets the flags not given from the environment (envDefaults).
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s takes no arguments (got %q)\n%s", fs.Name(), fs.Args(), helpHint(fs))
	}
	return envDefaults(fs, getenv)
}

// envDefaults sets every flag of fs that was not given on the command line
// (neither itself nor its -<name>-file, nor, for a -<name>-file, its
// -<name>) from IMAGEGEN_<NAME> in the environment. A secret given two
// ways in one place is refused (secretTwice).
func envDefaults(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := secretTwice(fs, given, getenv); err != nil {
		return err
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || given[f.Name+"-file"] || given[fileTarget(f)] || err != nil {
			return
		}
		name := envName(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if repeatable(f.Value) {
			for _, item := range strings.Split(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					if e := f.Value.Set(item); e != nil {
						err = envError(fs, f, name, item, e)
					}
				}
			}
			return
		}
		if e := f.Value.Set(v); e != nil {
			err = envError(fs, f, name, v, e)
		}
	})
	return err
}

// envError says which variable holds a value its flag refused, the value
// (unless the flag is a secret) and what was expected.
func envError(fs *flag.FlagSet, f *flag.Flag, name, value string, err error) error {
	shown := fmt.Sprintf("%s=%q", name, value)
	if fs.Lookup(f.Name+"-file") != nil { // a secret: never echoed
		shown = name
	}
	why := err.Error()
	if errors.Is(err, strconv.ErrSyntax) || errors.Is(err, strconv.ErrRange) || why == "parse error" || why == "value out of range" {
		why = "want " + expectedValue(f.Value)
	}
	return fmt.Errorf("%s: %s (it sets -%s)", shown, why, f.Name)
}

// repeatable reports whether v is a flag that may be given more than
// once (comma-separated in the env).
func repeatable(v flag.Value) bool {
	switch v.(type) {
	case *stringList, *prefixList:
		return true
	}
	return false
}

func envName(flagName string) string {
	return "IMAGEGEN_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// stringList is a repeatable string flag (comma-separated in the env).
type stringList []string

func (l *stringList) String() string { return fmt.Sprint(len(*l)) + " values" }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// prefixList is a repeatable CIDR flag; a bare address is its own /32 or
// /128, and an IPv4 address or range written IPv4-mapped
// ("::ffff:10.0.0.0/104") is that IPv4 one: peers are compared unmapped,
// and netip.Prefix.Contains matches no IPv4 address to a mapped prefix.
type prefixList []netip.Prefix

func (l *prefixList) String() string { return fmt.Sprint(len(*l)) + " prefixes" }

func (l *prefixList) Set(v string) error {
	v = strings.TrimSpace(v)
	p, err := netip.ParsePrefix(v)
	if err != nil {
		a, aerr := netip.ParseAddr(v)
		if aerr != nil {
			return fmt.Errorf("not a CIDR or IP address: %q", v)
		}
		p = netip.PrefixFrom(a, a.BitLen()) // its /32 or /128 (a mapped one: Unmap below)
	}
	*l = append(*l, netprefix.Unmap(p))
	return nil
}

// maxSecretFile bounds what a -<name>-file flag reads.
const maxSecretFile = 64 << 10

// secretFiles registers, for each named flag of fs, a "<name>-file" flag
// that reads the value from a file instead (one value per line for a
// repeatable flag), so secrets stay out of the process list, and says in
// the flag's help that the environment and the file work too. Call it
// after the flags are registered, before parsing.
func secretFiles(fs *flag.FlagSet, names ...string) {
	for _, name := range names {
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		f.Usage += fmt.Sprintf(" (a secret: set it with %s or -%s-file rather than on the command line, where ps shows it)", envName(name), name)
		how := "trailing newline ignored"
		if repeatable(f.Value) {
			how = "one per line"
		}
		fs.Var(fileValue{target: f.Value}, name+"-file", fmt.Sprintf("file holding -%s (%s)", name, how))
	}
}

// fileTarget is the name of the flag that f, a -<name>-file of
// secretFiles, sets; "" for any other flag.
func fileTarget(f *flag.Flag) string {
	if _, ok := f.Value.(fileValue); !ok {
		return ""
	}
	return strings.TrimSuffix(f.Name, "-file")
}

// secretTwice refuses a secret given both as itself and as a file, on
// the command line or in the environment (where the other place does not
// give it): which one won would depend on the order the flags are set
// in, and a repeatable flag would take the values of both. The error
// names the two, never a value.
func secretTwice(fs *flag.FlagSet, given map[string]bool, getenv func(string) string) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := fileTarget(f)
		switch {
		case name == "" || err != nil:
		case given[name] && given[f.Name]:
			err = fmt.Errorf("-%s and -%s are both given: give the secret one way", name, f.Name)
		case given[name] || given[f.Name]:
		case getenv(envName(name)) != "" && getenv(envName(f.Name)) != "":
			err = fmt.Errorf("%s and %s are both set: give the secret one way", envName(name), envName(f.Name))
		}
	})
	return err
}

// fileValue sets target from the contents of the file it is given.
type fileValue struct{ target flag.Value }

func (v fileValue) String() string { return "" }

func (v fileValue) Set(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return err
	}
	if len(b) > maxSecretFile {
		return fmt.Errorf("%s is larger than %d bytes", path, maxSecretFile)
	}
	text := strings.TrimRight(string(b), "\r\n")
	if !repeatable(v.target) {
		if text == "" {
			return fmt.Errorf("%s is empty", path)
		}
		return v.target.Set(text)
	}
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if err := v.target.Set(line); err != nil {
				return err
			}
		}
	}
	return nil
}
