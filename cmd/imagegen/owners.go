package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/imagegen/imagegen"
)

const ownersUsage = `usage: imagegen owners <command> -redis URL|-postgres URL -owner USER [flags]

commands:
  weight   print the user's fair-share weight, or set it with -set N (1-1000):
           when several users have tasks waiting, weight 3 gets three turns
           for one of weight 1 (docs/scheduling.md)

Run "imagegen owners <command> -h" for the flags of a command.
`

// ownersFlags registers the flags of owners sub beyond the admin flags.
func ownersFlags(sub string, weight *int) func(*flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		if sub == "weight" {
			fs.IntVar(weight, "set", 0, fmt.Sprintf("the weight to set, 1 to %d (0 prints the current one)", imagegen.MaxOwnerWeight))
		}
	}
}

// ownersCmd: imagegen owners weight.
func ownersCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd, err := pickSubcommand("owners", args, ownersUsage, stdout, stderr)
	if cmd == "" {
		return err
	}
	var weight int
	a, err := parseAdmin("owners "+cmd, args[1:], getenv, stderr, ownersFlags(cmd, &weight))
	if err != nil {
		return helpIsNoError(err)
	}
	if weight < 0 || weight > imagegen.MaxOwnerWeight {
		return fmt.Errorf("-set must be 1 to %d (got %d)", imagegen.MaxOwnerWeight, weight)
	}
	return withService(ctx, a.storeFlags, func(svc *imagegen.Service) error {
		if weight > 0 {
			if err := svc.SetOwnerWeight(ctx, a.owner, weight); err != nil {
				return err
			}
		}
		w, err := svc.OwnerWeight(ctx, a.owner)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s has weight %d\n", a.owner, w)
		return nil
	})
}
