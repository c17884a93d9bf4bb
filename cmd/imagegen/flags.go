package main

import (
	"flag"
	"fmt"
	"strings"
)

// envDefaults sets every flag of fs that was not given on the command line
// from IMAGEGEN_<NAME> in the environment.
func envDefaults(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		name := envName(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if _, repeatable := f.Value.(*stringList); repeatable {
			for _, item := range strings.Split(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					if e := f.Value.Set(item); e != nil {
						err = fmt.Errorf("%s: %w", name, e)
					}
				}
			}
			return
		}
		if e := f.Value.Set(v); e != nil {
			err = fmt.Errorf("%s: %w", name, e)
		}
	})
	return err
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
