package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/imagegen/imagegen"
)

// adminFlags are the flags every admin command shares.
type adminFlags struct {
	storeFlags
	owner string
}

func (a *adminFlags) register(fs *flag.FlagSet) {
	a.storeFlags.register(fs, "of the store to manage (one of -redis and -postgres is required)")
	fs.StringVar(&a.owner, "owner", "", "user id (required)")
}

// adminFlagSet is the flag set of admin command name, filling a;
// extra registers the command's own flags.
func adminFlagSet(name string, a *adminFlags, stderr io.Writer, extra func(*flag.FlagSet)) *flag.FlagSet {
	fs := newFlagSet(name, stderr)
	a.register(fs)
	extra(fs)
	return fs
}

// parseAdmin parses args for an admin command; extra registers more flags.
func parseAdmin(name string, args []string, getenv func(string) string, stderr io.Writer, extra func(*flag.FlagSet)) (adminFlags, error) {
	var a adminFlags
	fs := adminFlagSet(name, &a, stderr, extra)
	if err := parseFlags(fs, args, getenv); err != nil {
		return a, err
	}
	if err := a.storeFlags.check(true); err != nil {
		return a, err
	}
	if a.owner == "" {
		return a, errors.New("-owner is required")
	}
	return a, nil
}

const keysUsage = `usage: imagegen keys <command> -redis URL|-postgres URL -owner USER [flags]

commands:
  create   make a new API key for the user and print it (shown once)
  list     list the user's keys: id, hint, created, state
  revoke   revoke the user's key -id KEY_ID (from keys list); it stops working at once

Run "imagegen keys <command> -h" for the flags of a command.
`

// keysFlags registers the flags of keys sub beyond the admin flags.
func keysFlags(sub string, id *string) func(*flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		if sub == "revoke" {
			fs.StringVar(id, "id", "", "id of the key to revoke (from keys list)")
		}
	}
}

// keysCmd: imagegen keys create|list|revoke.
func keysCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd, err := pickSubcommand("keys", args, keysUsage, stdout, stderr)
	if cmd == "" {
		return err
	}
	var id string
	a, err := parseAdmin("keys "+args[0], args[1:], getenv, stderr, keysFlags(args[0], &id))
	if err != nil {
		return helpIsNoError(err)
	}
	return withService(ctx, a.storeFlags, func(svc *imagegen.Service) error {
		switch args[0] {
		case "create":
			key, rec, err := svc.CreateKey(ctx, a.owner)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "created key %s for %s; the key is shown once:\n%s\n", rec.ID, a.owner, key)
			return nil
		case "list":
			keys, err := svc.Keys(ctx, a.owner)
			if err != nil {
				return err
			}
			tw := newTable(stdout)
			fmt.Fprintln(tw, "ID\tHINT\tNAME\tCREATED\tLAST USED\tSTATE")
			for _, k := range keys {
				state := "active"
				if k.Revoked {
					state = "revoked"
				}
				lastUsed := "never"
				if !k.LastUsedAt.IsZero() {
					lastUsed = k.LastUsedAt.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Hint, cmp.Or(k.Name, "-"), k.CreatedAt.Format(time.RFC3339), lastUsed, state)
			}
			return tw.Flush()
		case "revoke":
			if id == "" {
				return errors.New("-id is required")
			}
			if err := svc.RevokeKey(ctx, a.owner, id); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "revoked key %s of %s\n", id, a.owner)
			return nil
		default:
			return fmt.Errorf("unknown keys command %q (create, list, revoke)", args[0])
		}
	})
}

const creditsUsage = `usage: imagegen credits <command> -redis URL|-postgres URL -owner USER [flags]

commands:
  grant   add -amount N credits to the user, once per -ref REF (required: an
          invoice or payment id; running the same grant again changes nothing)
  show    print the user's balance

Run "imagegen credits <command> -h" for the flags of a command.
`

// creditsFlags registers the flags of credits sub beyond the admin
// flags.
func creditsFlags(sub string, amount *int64, ref *string) func(*flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		if sub == "grant" {
			fs.Int64Var(amount, "amount", 0, "credits to add (positive)")
			fs.StringVar(ref, "ref", "", "reference of the grant, e.g. an invoice id (required): a grant with a ref already used is not applied again")
		}
	}
}

// creditsCmd: imagegen credits grant|show.
func creditsCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd, err := pickSubcommand("credits", args, creditsUsage, stdout, stderr)
	if cmd == "" {
		return err
	}
	var amount int64
	var ref string
	a, err := parseAdmin("credits "+args[0], args[1:], getenv, stderr, creditsFlags(args[0], &amount, &ref))
	if err != nil {
		return helpIsNoError(err)
	}
	if cmd == "grant" && ref == "" {
		return errors.New("-ref is required (an invoice or payment id), so that running the grant again cannot grant twice")
	}
	return withService(ctx, a.storeFlags, func(svc *imagegen.Service) error {
		switch args[0] {
		case "grant":
			res, err := svc.Grant(ctx, a.owner, amount, ref)
			if err != nil {
				return err
			}
			if res.AlreadyApplied {
				fmt.Fprintf(stdout, "grant %q was already applied; %s has %d credits\n", ref, a.owner, res.Balance)
				return nil
			}
			fmt.Fprintf(stdout, "granted %d credits to %s; balance %d\n", amount, a.owner, res.Balance)
			return nil
		case "show":
			balance, err := svc.Balance(ctx, a.owner)
			if err != nil {
				return err
			}
			ledger, err := svc.Ledger(ctx, a.owner)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s has %d credits\n", a.owner, balance)
			tw := newTable(stdout)
			fmt.Fprintln(tw, "AT\tKIND\tAMOUNT\tREF")
			for _, e := range ledger {
				fmt.Fprintf(tw, "%s\t%s\t%+d\t%s\n", e.At.Format(time.RFC3339), e.Kind, e.Amount, tableCell(e.Reference()))
			}
			return tw.Flush()
		default:
			return fmt.Errorf("unknown credits command %q (grant, show)", args[0])
		}
	})
}

// tableCell is s as a table cell shows it: as it is, unless it holds a
// control character, which is written escaped (as Go quotes it, without
// the quotes). Cells carry what the host app, users and providers wrote
// (an owner id, a provider's error), and an escape sequence in one would
// rewrite the operator's terminal, a newline or a tab forge a row or a
// column. generate and tasks show what a server sent (a task's id,
// status, error and model, an error answer's message) through it too.
func tableCell(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// newTable lines up the tab-separated cells written to w in columns, as
// the admin and inspect commands print their lists; Flush it at the end.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

func helpIsNoError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}
