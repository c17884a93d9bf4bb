package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/placeholder"
	"github.com/imagegen/imagegen/server"
)

// runtimeConfig is what every process that runs generations shares:
// serve (with workers) and worker.
type runtimeConfig struct {
	opsConfig
	storeFlags
	limitFlags
	model            string
	workers          int
	placeholderDelay time.Duration
	placeholderSize  int
	allowPrivateURLs bool
	retention        time.Duration
	lease            time.Duration
	blobsURL         string
	blobSweep        time.Duration
	blobTimeout      time.Duration
	orphanGrace      time.Duration
	shutdownTimeout  time.Duration
}

func (c *runtimeConfig) register(fs *flag.FlagSet, defaultWorkers int, storeWhat string) {
	c.storeFlags.register(fs, storeWhat)
	fs.StringVar(&c.model, "model", placeholder.Name, "the model: placeholder, openai, gemini, fal, replicate, stability, bfl (bfl/flux-pro-1.1, bfl/flux-pro-1.1-ultra, bfl/flux-dev, bfl/flux-kontext-pro) a1111[/CHECKPOINT] (a self-hosted sdapi server at A1111_BASE_URL, optional A1111_API_KEY user:password) or comfyui[/CHECKPOINT or workflow name] (a ComfyUI server at COMFYUI_BASE_URL, optional COMFYUI_API_KEY Bearer token, workflows NAME.json and NAME.img2img.json from COMFYUI_WORKFLOWS), optionally /<model id> and =<cost 1-3>; several, comma-separated, make a fallback chain (keys from OPENAI_API_KEY, GEMINI_API_KEY, FAL_KEY, REPLICATE_API_TOKEN, STABILITY_API_KEY, BFL_API_KEY; <PROVIDER>_BASE_URL points one at another API root)")
	fs.IntVar(&c.workers, "workers", defaultWorkers, "concurrent generations in this process (0 runs none: an API process of a shared store, whose worker processes run the tasks)")
	fs.DurationVar(&c.placeholderDelay, "placeholder-delay", 2*time.Second, "how long the placeholder model takes per image")
	fs.IntVar(&c.placeholderSize, "placeholder-size", 1024, "pixels on the long side of the placeholder model's images, 16 to 4096 (small ones make load tests measure the service rather than PNG encoding)")
	fs.BoolVar(&c.allowPrivateURLs, "allow-private-urls", false, "let image_input and callback_url URLs point at loopback and private addresses, and callbacks use http (development only)")
	fs.DurationVar(&c.retention, "retention", 24*time.Hour, "how long finished tasks and their images are kept (use one value for all processes)")
	fs.StringVar(&c.blobsURL, "blobs", "", "where image bytes are kept: file:///dir, or s3://bucket/prefix?endpoint=URL&region=R&path_style=true&checksum=when_required&create_bucket=true (credentials from the AWS chain; the bucket must exist unless create_bucket=true); empty keeps them beside the records (in this process, or in Redis with -redis). Use one value for all processes")
	fs.DurationVar(&c.blobSweep, "blob-sweep", 5*time.Minute, "how often workers delete image bytes whose record is gone (expired, or orphaned by a crash)")
	fs.DurationVar(&c.blobTimeout, "blob-timeout", imagegen.DefaultBlobTimeout, "how long each call to the -blobs store (a write, a read of a download, a delete, each blob of a listing) may take before it fails: a download then answers 504, a worker retries the task")
	fs.DurationVar(&c.orphanGrace, "orphan-grace", 10*time.Minute, "how old image bytes without a record must be before the sweep deletes them (at least 35s, and -blob-timeout plus 25s)")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 20*time.Second, "on SIGTERM, how long running generations may finish before they are stopped and their tasks given back to the queue (without using up an attempt)")
	fs.DurationVar(&c.lease, "lease", 30*time.Second, "how long a worker holds a task before another may take it over (renewed while it runs)")
	c.limitFlags.register(fs)
	c.opsConfig.register(fs)
}

func (c runtimeConfig) validate() error {
	if err := c.storeFlags.check(false); err != nil {
		return err
	}
	switch {
	case c.workers < 0:
		return errors.New("-workers must not be negative")
	case c.retention <= 0:
		return errors.New("-retention must be positive")
	case c.placeholderDelay < 0:
		return errors.New("-placeholder-delay must not be negative")
	case c.placeholderSize < 16 || c.placeholderSize > 4096:
		return errors.New("-placeholder-size must be 16 to 4096")
	case c.shutdownTimeout < 0:
		return errors.New("-shutdown-timeout must not be negative")
	case c.lease < time.Second:
		return errors.New("-lease must be at least 1s")
	case c.blobSweep <= 0:
		return errors.New("-blob-sweep must be positive")
	case c.blobTimeout <= 0:
		return errors.New("-blob-timeout must be positive")
	case c.orphanGrace < imagegen.OrphanGraceFor(c.blobTimeout):
		return fmt.Errorf("-orphan-grace must be at least %v with -blob-timeout %v", imagegen.OrphanGraceFor(c.blobTimeout), c.blobTimeout)
	}
	if err := c.limitFlags.validate(); err != nil {
		return err
	}
	return c.opsConfig.validate()
}

// serviceConfig wires the model of -model on the backend's store. getenv gives the
// providers' API keys.
func serviceConfig(c runtimeConfig, getenv func(string) string, be backend, log *slog.Logger) (imagegen.Config, error) {
	clock := imagegen.SystemClock{}
	fetcher, err := fetch.New(fetch.Config{AllowPrivate: c.allowPrivateURLs})
	if err != nil {
		return imagegen.Config{}, err
	}
	model, err := newModel(c.model, modelDeps{getenv: getenv, fetcher: fetcher, clock: clock, delay: c.placeholderDelay, size: c.placeholderSize, log: log})
	if err != nil {
		return imagegen.Config{}, err
	}
	limits, err := c.limitFlags.limits(c.model, model)
	if err != nil {
		return imagegen.Config{}, err
	}
	return imagegen.Config{
		Store: be.store, Model: model, Clock: clock, Logger: log,
		BlobTimeout:        c.blobTimeout,
		MaxPending:         c.limitFlags.maxPendingConfig(),
		AllowHTTPCallbacks: c.allowPrivateURLs,
		ImageInputGuard:    fetcher,     // the model's: image_input URLs it plainly refuses are refused at submit
		IdempotencyTTL:     c.retention, // submit answers are replayed as long as their tasks are kept
		WorkerConfig: imagegen.WorkerConfig{
			Workers: c.workers, LeaseDuration: c.lease, WorkReady: be.workReady, Limits: limits,
			BlobSweepInterval: c.blobSweep, OrphanGrace: c.orphanGrace,
			ShutdownTimeout: max(c.shutdownTimeout, time.Nanosecond), // 0 would mean the default
		},
	}, nil
}

// runtimeDeps is what a process runs its service on.
type runtimeDeps struct {
	backend // the caller closes it
	obs     *observability
	service imagegen.Config // on the backend, counted by obs
}

// openRuntime opens the backend of c, with rateLimit requests per API key
// a minute, the process's observability and the service's config on
// them; with workers, the model's readiness is probed too.
func openRuntime(ctx context.Context, c runtimeConfig, rateLimit int, getenv func(string) string, log *slog.Logger) (runtimeDeps, error) {
	be, err := openBackend(ctx, backendConfig{storeFlags: c.storeFlags, blobsURL: c.blobsURL, retention: c.retention, rateLimit: rateLimit})
	if err != nil {
		return runtimeDeps{}, err
	}
	fail := func(err error) (runtimeDeps, error) { _ = be.close(); return runtimeDeps{}, err }
	cfg, err := serviceConfig(c, getenv, be, log)
	if err != nil {
		return fail(err)
	}
	obs, err := newObservability(c.opsConfig, be.store, cfg.Limits)
	if err != nil {
		return fail(err)
	}
	cfg.Observer = obs.observer()
	obs.checks = server.ReadyChecks(cfg, c.workers > 0)
	return runtimeDeps{backend: be, obs: obs, service: cfg}, nil
}

// openService is openRuntime with the service made on it, for the
// processes that run the service themselves (worker, the admin commands)
// rather than through server.New. They serve no API, so their rate
// limiter (1 a key) is never asked. The caller closes the runtime.
func openService(ctx context.Context, c runtimeConfig, getenv func(string) string, log *slog.Logger) (*imagegen.Service, runtimeDeps, error) {
	rt, err := openRuntime(ctx, c, 1, getenv, log)
	if err != nil {
		return nil, runtimeDeps{}, err
	}
	svc, err := imagegen.New(rt.service)
	if err != nil {
		_ = rt.close()
		return nil, runtimeDeps{}, err
	}
	return svc, rt, nil
}

// withService opens the shared store and runs fn with a service on it.
func withService(ctx context.Context, stores storeFlags, fn func(*imagegen.Service) error) error {
	return withLoggedService(ctx, stores, slog.New(slog.DiscardHandler), fn)
}

// withLoggedService is withService with the service logging to log. The
// service runs no workers: the admin commands only read and change the
// store.
func withLoggedService(ctx context.Context, stores storeFlags, log *slog.Logger, fn func(*imagegen.Service) error) error {
	c := runtimeConfig{storeFlags: stores, model: placeholder.Name, retention: 24 * time.Hour, lease: 30 * time.Second}
	svc, rt, err := openService(ctx, c, noEnv, log)
	if err != nil {
		return err
	}
	defer rt.close()
	return fn(svc)
}

// noEnv is an empty environment: the admin commands run no provider.
func noEnv(string) string { return "" }
