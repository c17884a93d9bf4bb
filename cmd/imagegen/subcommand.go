package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/imagegen/imagegen/internal/suggest"
)

// errShownUsage marks a refusal whose usage text has been printed.
var errShownUsage = errors.New("see the usage above")

// subcommands are the commands of a command group, in the order its
// usage lists them.
func subcommands(group string) []string {
	switch group {
	case "keys":
		return []string{"create", "list", "revoke"}
	case "credits":
		return []string{"grant", "show"}
	case "owners":
		return []string{"weight"}
	case "inspect":
		return []string{"stats", "list", "show", "retry", "cancel", "purge"}
	case "tasks":
		return []string{"get"}
	}
	return nil
}

// pickSubcommand reads the subcommand of a command group (keys, credits,
// tasks). With none it prints usage to stderr and fails; an unknown one
// fails in two lines, naming the nearest subcommand and -h; with -h,
// -help, --help or help it prints usage to stdout and returns "" and no
// error, so the caller just returns.
func pickSubcommand(group string, args []string, usage string, stdout, stderr io.Writer) (string, error) {
	subs := subcommands(group)
	switch {
	case len(args) == 0:
		fmt.Fprint(stderr, usage)
		return "", fmt.Errorf("no %s command given (%w)", group, errShownUsage)
	case slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]):
		fmt.Fprint(stdout, usage)
		return "", nil
	case !slices.Contains(subs, args[0]):
		msg := fmt.Sprintf("unknown %s command %q", group, args[0])
		if near := suggest.Nearest(args[0], subs); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		return "", fmt.Errorf("%s: the commands are %s\nrun \"imagegen %s -h\" for what they do", msg, strings.Join(subs, ", "), group)
	}
	return args[0], nil
}
