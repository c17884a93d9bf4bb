package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/imagegen/imagegen"
)

const inspectUsage = `usage: imagegen inspect <command> -redis URL|-postgres URL [flags]

commands:
  stats                        queue depth and the wait of the oldest ready task
  list [-owner USER] [-status S] [-since T] [-until T] [-limit N] [-cursor C]
                               tasks of every user, newest first (T: RFC 3339, or a
                               duration ago such as 2h)
  show TASK_ID                 one task (attempts, last error, request id) and its
                               ledger entries, as JSON
  retry TASK_ID -reason TEXT [-recharge]
                               give a failed task back to the queue; -recharge
                               charges its cost again, else it runs free
  cancel TASK_ID -reason TEXT  cancel a pending or processing task (refunded)
  purge -reason TEXT           remove expired tasks and images now

retry, cancel and purge log the action with its reason (stderr).
Run "imagegen inspect <command> -h" for the flags of a command.
`

// inspectFlags are the flags of the inspect commands.
type inspectFlags struct {
	storeFlags
	reason   string
	recharge bool
	filter   imagegen.TaskFilter
	status   string
	since    string
	until    string
	limit    int
	cursor   string
}

// inspectCmd: imagegen inspect stats|list|show|retry|cancel|purge.
func inspectCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd, err := pickSubcommand("inspect", args, inspectUsage, stdout, stderr)
	if cmd == "" {
		return err
	}
	f, ids, err := parseInspect(cmd, args[1:], getenv, stderr)
	if err != nil {
		return helpIsNoError(err)
	}
	wantIDs := map[string]int{"show": 1, "retry": 1, "cancel": 1}[cmd]
	if len(ids) != wantIDs {
		return fmt.Errorf("inspect %s takes %d task id (got %d)\n%s", cmd, wantIDs, len(ids), inspectUsage)
	}
	if (cmd == "retry" || cmd == "cancel" || cmd == "purge") && f.reason == "" {
		return fmt.Errorf("inspect %s needs -reason: say why, for the record", cmd)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	return withLoggedService(ctx, f.storeFlags, log, func(svc *imagegen.Service) error {
		in := svc.Inspector()
		switch cmd {
		case "stats":
			return printStats(ctx, in, stdout)
		case "list":
			return printTaskList(ctx, in, f, stdout)
		case "show":
			d, err := in.Task(ctx, ids[0])
			if err != nil {
				return err
			}
			return printJSON(stdout, newInspectShow(d))
		case "retry":
			if err := in.Retry(ctx, ids[0], f.recharge, f.reason); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "task %s is pending again (recharged: %t)\n", ids[0], f.recharge)
		case "cancel":
			if err := in.Cancel(ctx, ids[0], f.reason); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "task %s cancelled and refunded\n", ids[0])
		case "purge":
			n, err := in.Purge(ctx, f.reason)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "purged %d expired tasks\n", n)
		}
		return nil
	})
}

// inspectFlagSet is the flag set of inspect cmd, filling f.
func inspectFlagSet(cmd string, f *inspectFlags, stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet("inspect "+cmd, stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, inspectUsage)
		fs.PrintDefaults()
	}
	f.storeFlags.register(fs, "of the store to inspect (one of -redis and -postgres is required)")
	switch cmd {
	case "list":
		fs.StringVar(&f.filter.Owner, "owner", "", "only this user's tasks")
		fs.StringVar(&f.status, "status", "", "only tasks in this state: pending, processing, success or failed")
		fs.StringVar(&f.since, "since", "", "only tasks created at or after this time (RFC 3339, or a duration ago: 2h)")
		fs.StringVar(&f.until, "until", "", "only tasks created before this time (RFC 3339, or a duration ago)")
		fs.IntVar(&f.limit, "limit", imagegen.DefaultListLimit, fmt.Sprintf("tasks per page, 1 to %d", imagegen.MaxListLimit))
		fs.StringVar(&f.cursor, "cursor", "", "the next-page cursor printed by the previous list")
	case "retry", "cancel", "purge":
		fs.StringVar(&f.reason, "reason", "", "why: logged with the action (required)")
		if cmd == "retry" {
			fs.BoolVar(&f.recharge, "recharge", false, "charge the task's cost again (a later failure refunds it again); without, it runs free")
		}
	}
	return fs
}

func parseInspect(cmd string, args []string, getenv func(string) string, stderr io.Writer) (inspectFlags, []string, error) {
	var f inspectFlags
	fs := inspectFlagSet(cmd, &f, stderr)
	ids, err := parseInterspersed(fs, args)
	if err != nil {
		return f, nil, err
	}
	if err := envDefaults(fs, getenv); err != nil {
		return f, nil, err
	}
	if err := f.storeFlags.check(true); err != nil {
		return f, nil, err
	}
	f.filter.Status = imagegen.Status(f.status)
	now := time.Now()
	if f.filter.Since, err = parseWhen("-since", f.since, now); err != nil {
		return f, nil, err
	}
	if f.filter.Until, err = parseWhen("-until", f.until, now); err != nil {
		return f, nil, err
	}
	return f, ids, nil
}

// parseWhen reads an RFC 3339 time or a duration before now; "" is none.
func parseWhen(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or a duration ago (2h)", name, v)
	}
	return t, nil
}

func printStats(ctx context.Context, in *imagegen.Inspector, stdout io.Writer) error {
	st, err := in.QueueStats(ctx)
	if err != nil {
		return err
	}
	tw := newTable(stdout)
	fmt.Fprintf(tw, "pending\t%d\nprocessing\t%d\noldest ready wait\t%s\n", st.Pending, st.Processing, st.OldestPending.Round(time.Millisecond))
	return tw.Flush()
}

func printTaskList(ctx context.Context, in *imagegen.Inspector, f inspectFlags, stdout io.Writer) error {
	page, err := in.ListTasks(ctx, f.filter, f.limit, f.cursor)
	var ve *imagegen.ValidationError
	if errors.As(err, &ve) {
		return fmt.Errorf("-%s", ve.Error())
	}
	if err != nil {
		return err
	}
	tw := newTable(stdout)
	fmt.Fprintln(tw, "TASK\tOWNER\tSTATUS\tMODEL\tCOST\tATTEMPTS\tCREATED\tERROR")
	for _, t := range page.Tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", tableCell(t.ID), tableCell(t.Owner), tableCell(string(t.Status)), tableCell(t.Model), t.Cost, t.Attempt,
			t.CreatedAt.UTC().Format(time.RFC3339), tableCell(cmp.Or(string(t.ErrorCode), t.LastError)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(stdout, "more: -cursor %s\n", page.Next)
	}
	return nil
}
