package main

import (
	"flag"
	"fmt"
	"net/netip"
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
		if repeatable(f.Value) {
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
// /128.
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
		p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
	}
	*l = append(*l, p.Masked())
	return nil
}
