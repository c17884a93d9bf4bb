package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/imagegen/imagegen/internal/gcfloor"
)

// workerFlags is worker's flag set, filling c.
func workerFlags(c *runtimeConfig, stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet("worker", stderr)
	c.register(fs, 4, "of the store shared with the API processes (one of -redis and -postgres is required)")
	return fs
}

// worker runs generations only, against a shared Redis or PostgreSQL,
// until ctx ends;
// then it lets running generations finish (or gives their tasks back).
func worker(ctx context.Context, args []string, getenv func(string) string, _, stderr io.Writer) error {
	var c runtimeConfig
	fs := workerFlags(&c, stderr)
	if err := parseFlags(fs, args, getenv); err != nil {
		return helpIsNoError(err)
	}
	if err := c.validate(); err != nil {
		return err
	}
	if err := c.storeFlags.check(true); err != nil {
		return err
	}
	if c.workers == 0 {
		return errors.New("-workers must be at least 1 for a worker process")
	}
	defer gcfloor.Keep(c.gcFloorMiB << 20)()
	log, logs := c.logger(stderr)
	defer logs.Close() // last: the buffered lines of the shutdown too
	svc, rt, err := openService(ctx, c, getenv, log)
	if err != nil {
		return err
	}
	defer rt.close()
	admin, stopAdmin, err := rt.obs.startAdmin(ctx, c.opsConfig, log)
	if err != nil {
		return err
	}
	defer stopAdmin()
	log.Info("imagegen worker running", "workers", c.workers, "model", c.model, "lease", c.lease.String(), "admin", admin)
	_ = logs.Flush()
	err = svc.Run(ctx)
	log.Info("stopped")
	return err
}
