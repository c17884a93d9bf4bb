// Command imagegen runs the image-generation task service.
//
//	imagegen serve [flags]                    the HTTP API, with in-process workers
//	imagegen worker -redis URL [flags]        workers only, on a shared Redis (or -postgres URL)
//	imagegen keys create|list|revoke [flags]  manage API keys in a shared store
//	imagegen credits grant|show [flags]       manage credits in a shared store
//	imagegen inspect stats|list|show|retry|cancel|purge [flags]
//	                                          inspect and repair a shared store's tasks
//	imagegen migrate -postgres URL [flags]    create or update the PostgreSQL schema
//	imagegen generate -prompt TEXT [flags]    generate an image through a server's API
//	imagegen tasks get TASK_ID                print a task of a server's API
//
// Every flag of serve, worker, keys, credits, inspect and migrate can
// also be set in the environment as IMAGEGEN_<NAME>, with the flag name
// upper-cased and dashes as underscores (-rate-limit is
// IMAGEGEN_RATE_LIMIT); a flag on the command line wins. The full list
// is docs/configuration.md, generated from the flag sets by a test.
// Secrets (-demo-key, -signing-key and a -redis URL with a password)
// are best given that way or with -<name>-file (a file holding the
// value), since the command line shows in ps.
// generate and tasks read the server's URL from
// -server or IMAGEGEN_SERVER, and the API key from IMAGEGEN_API_KEY only.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/suggest"
)

func main() {
	// go-redis logs each failed dial of its pool on its own; the commands
	// report the failure once, in their own words.
	goredis.SetLogger(silentRedisLog{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "imagegen:", err)
		os.Exit(1)
	}
}

const usage = `usage: imagegen <command> [flags]

commands:
  serve     run the HTTP API and workers (memory store, or a shared one
            with -redis URL or -postgres URL)
  worker    run workers only, against a shared store (-redis or -postgres URL)
  keys      create, list or revoke API keys in a shared store
  credits   grant or show credits in a shared store
  owners    a user's fair-share weight in a shared store (imagegen owners weight -h)
  inspect   operators' view of a shared store: queue stats, tasks of every user,
            retry, cancel, purge (imagegen inspect -h)
  migrate   create or update the PostgreSQL schema (before serve -postgres):
              imagegen migrate -postgres URL [-schema S] [-down | -to N]
            or copy a single-node Redis store onto a Cluster (queue drained):
              imagegen migrate -redis URL -redis-to redis+cluster://…
  generate  generate images through a server's API and write them to files:
              imagegen generate -prompt TEXT [-aspect 16:9] [-image URL ...] [-o out.png] [-server URL]
  tasks     print a task of a server's API as JSON:
              imagegen tasks get [-server URL] TASK_ID

generate and tasks take the API key from IMAGEGEN_API_KEY and the server
from -server, IMAGEGEN_SERVER or http://127.0.0.1:8080.

Run "imagegen <command> -h" for the flags of a command.
`

// command runs one of the program's commands; args follow its name.
type command func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error

// run is the whole program, with its inputs passed in so tests can call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("no command given")
	}
	commands := commands()
	if cmd, ok := commands[args[0]]; ok {
		return cmd(ctx, args[1:], getenv, stdout, stderr)
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		msg := fmt.Sprintf("unknown command %q", args[0])
		if near := suggest.Nearest(args[0], slices.Collect(maps.Keys(commands))); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		return errors.New(msg + "\nrun \"imagegen help\" to list the commands")
	}
}

// commands are the program's commands by name.
func commands() map[string]command {
	return map[string]command{
		"serve":    serve,
		"worker":   worker,
		"keys":     keysCmd,
		"credits":  creditsCmd,
		"owners":   ownersCmd,
		"migrate":  migrateCmd,
		"generate": generate,
		"tasks":    tasksCmd,
		"inspect":  inspectCmd,
	}
}

// silentRedisLog drops go-redis's internal log lines.
type silentRedisLog struct{}

func (silentRedisLog) Printf(context.Context, string, ...any) {}
