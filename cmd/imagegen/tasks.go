package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/imagegen/imagegen/client"
)

const tasksUsage = `usage: imagegen tasks <command> [flags]

commands:
  get [-server URL] TASK_ID   print a task of a server's API as JSON

The API key comes from IMAGEGEN_API_KEY; the server from -server,
IMAGEGEN_SERVER or http://127.0.0.1:8080.
`

// tasksCmd: imagegen tasks get ID prints the task as indented JSON, in
// the full view (timing, model, seed, queue position) when the server
// has it.
func tasksCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if cmd, err := pickSubcommand("tasks", args, tasksUsage, stdout, stderr); cmd == "" {
		return err
	}
	var a apiFlags
	fs := tasksGetFlags(&a, stderr)
	ids, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return helpIsNoError(err)
	}
	if len(ids) != 1 {
		return fmt.Errorf("tasks get takes one task id (got %d)\n%s", len(ids), tasksUsage)
	}
	api, server, err := newAPIClient(a, getenv, client.WithFullView())
	if err != nil {
		return err
	}
	task, err := api.Task(ctx, ids[0])
	if err != nil {
		return explain(err, server)
	}
	return printJSON(stdout, task)
}

// tasksGetFlags is the flag set of tasks get, filling a.
func tasksGetFlags(a *apiFlags, stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet("tasks get", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, tasksUsage)
		fs.PrintDefaults()
	}
	a.register(fs)
	return fs
}

// parseInterspersed parses fs from args with flags before or after the
// arguments (tasks get ID -server URL), and returns the arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := parseArgs(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return rest, nil
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
