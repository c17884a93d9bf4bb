package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// worker runs generations only, against a shared Redis or PostgreSQL,
// until ctx ends;
// then it lets running generations finish (or gives their tasks back).
func worker(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	var c runtimeConfig
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs, 4)
	fs.Lookup("redis").Usage = "Redis URL (redis://host:port/db) of the store shared with the API processes (this or -postgres is required)"
	fs.Lookup("postgres").Usage = "PostgreSQL URL (postgres://user@host:port/db) of the store shared with the API processes (this or -redis is required)"
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("worker takes no arguments (got %q)", fs.Args())
	}
	if err := envDefaults(fs, getenv); err != nil {
		return err
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
	log := c.logger(stderr)
	be, err := openBackend(ctx, backendConfig{storeFlags: c.storeFlags, blobsURL: c.blobsURL, retention: c.retention, rateLimit: 1})
	if err != nil {
		return err
	}
	defer be.close()
	obs, err := newObservability(c.opsConfig, be.store)
	if err != nil {
		return err
	}
	svc, model, err := newService(c, getenv, be, log, obs.observer())
	if err != nil {
		return err
	}
	obs.checkModel(model)
	admin, stopAdmin, err := obs.startAdmin(ctx, c.opsConfig, log)
	if err != nil {
		return err
	}
	defer stopAdmin()
	log.Info("imagegen worker running", "workers", c.workers, "model", c.model, "lease", c.lease, "admin", admin)
	err = svc.Run(ctx)
	log.Info("stopped")
	return err
}
