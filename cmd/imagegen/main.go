// Command imagegen runs the image-generation task service.
//
//	imagegen serve [flags]                    the HTTP API, with in-process workers
//	imagegen worker -redis URL [flags]        workers only, on a shared Redis
//	imagegen keys create|list|revoke [flags]  manage API keys in a Redis store
//	imagegen credits grant|show [flags]       manage credits in a Redis store
//
// Every flag can also be set in the environment as IMAGEGEN_<NAME>, with
// the flag name upper-cased and dashes as underscores (-rate-limit is
// IMAGEGEN_RATE_LIMIT); a flag on the command line wins.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "imagegen:", err)
		os.Exit(1)
	}
}

const usage = `usage: imagegen <command> [flags]

commands:
  serve     run the HTTP API and workers (memory store, or Redis with -redis)
  worker    run workers only, against a shared Redis (-redis URL)
  keys      create, list or revoke API keys in a Redis store
  credits   grant or show credits in a Redis store

Run "imagegen <command> -h" for the flags of a command.
`

// run is the whole program, with its inputs passed in so tests can call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("no command given")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stdout, stderr)
	case "worker":
		return worker(ctx, args[1:], getenv, stderr)
	case "keys":
		return keysCmd(ctx, args[1:], getenv, stdout, stderr)
	case "credits":
		return creditsCmd(ctx, args[1:], getenv, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}
