package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/health"
	"github.com/imagegen/imagegen/internal/logbuf"
	"github.com/imagegen/imagegen/metrics"
)

// opsConfig is how serve and worker are operated: logs, and the admin
// listener with metrics, probes and (optionally) pprof.
type opsConfig struct {
	adminAddr string
	pprof     bool
	logFormat string
	logLevel  string
	// logFlush is the longest a log line waits in the buffer (logbuf).
	logFlush time.Duration
	// gcFloorMiB is the heap floor (gcfloor.Keep), in MiB.
	gcFloorMiB int
}

// defaultGCFloorMiB is -gc-floor's default.
const defaultGCFloorMiB = 16

func (c *opsConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.adminAddr, "admin-addr", "", "listen address of the admin listener: /metrics (Prometheus), /healthz, /readyz and, with -pprof, /debug/pprof/ (empty: none; keep it off the public network)")
	fs.BoolVar(&c.pprof, "pprof", false, "serve /debug/pprof/ on -admin-addr (all but cmdline, which would show secrets given as flags)")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.logLevel, "log-level", "info", "least level logged: debug, info, warn or error")
	fs.IntVar(&c.gcFloorMiB, "gc-floor", defaultGCFloorMiB, "MiB of heap the garbage collector counts as live without scanning it, so that while the live heap is small it collects once per that much allocated rather than at every few MiB (memory never written: the cost is the garbage the longer interval lets pile up, up to about this much more resident memory); 0 for none")
	fs.DurationVar(&c.logFlush, "log-flush", logbuf.DefaultInterval, "the longest an info or debug log line waits in memory before it is written (lines are written in batches, so that a line per request costs no system call; warnings and errors, and the buffer at exit, are written at once); 0 writes each line as it comes")
}

func (c opsConfig) validate() error {
	if c.logFormat != "text" && c.logFormat != "json" {
		return fmt.Errorf("-log-format must be text or json (got %q)", c.logFormat)
	}
	if _, err := c.level(); err != nil {
		return err
	}
	if c.logFlush < 0 {
		return errors.New("-log-flush must not be negative")
	}
	if c.gcFloorMiB < 0 || c.gcFloorMiB > 1<<20 {
		return errors.New("-gc-floor must be 0 to 1048576 (MiB)")
	}
	if c.pprof && c.adminAddr == "" {
		return errors.New("-pprof needs -admin-addr (pprof is never served on the API listener)")
	}
	return nil
}

func (c opsConfig) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.logLevel)); err != nil {
		return l, fmt.Errorf("-log-level must be debug, info, warn or error (got %q)", c.logLevel)
	}
	return l, nil
}

// logger is the process's logger on w, as -log-format, -log-level and
// -log-flush say. Durations are written one way in both formats, as Go
// duration strings ("30s", "1.52ms"): JSON would otherwise write
// nanoseconds. Lines are buffered (package logbuf) unless -log-flush is
// 0: the caller defers out.Close first thing after making the logger, so
// that it runs last and writes what is left.
func (c opsConfig) logger(w io.Writer) (log *slog.Logger, out logOutput) {
	level, _ := c.level() // checked by validate
	out = unbuffered{}
	var buffered *logbuf.Writer
	if c.logFlush > 0 {
		buffered = logbuf.New(w, logbuf.Config{Interval: c.logFlush})
		w, out = buffered, buffered
	}
	// slog's text format, written by logbuf's handler (the same bytes, in
	// a fraction of the time: a line per request). Text writes durations
	// as their String() already; JSON is told to.
	h := logbuf.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	if c.logFormat == "json" {
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: durationsAsStrings})
	}
	if buffered != nil {
		h = logbuf.Handler(h, buffered)
	}
	return slog.New(h), out
}

// logOutput is where a process's log lines wait to be written.
type logOutput interface {
	Flush() error // writes the lines waiting
	Close() error // writes them and stops buffering
}

// unbuffered is the logOutput of -log-flush 0: lines are written as they come.
type unbuffered struct{}

func (unbuffered) Flush() error { return nil }
func (unbuffered) Close() error { return nil }

// observability is what a process counts and how it is probed.
type observability struct {
	registry *prometheus.Registry
	metrics  *metrics.Metrics // nil without -admin-addr
	checks   []health.Check
}

// newObservability makes the metrics (only when there is an admin
// listener to serve them); the readiness checks come with the service's
// config (openRuntime).
func newObservability(c opsConfig, store imagegen.Store, limits imagegen.Limits) (*observability, error) {
	o := &observability{}
	if c.adminAddr == "" {
		return o, nil
	}
	o.registry = prometheus.NewRegistry()
	m, err := metrics.New(metrics.Config{Registerer: o.registry, Queue: store, Scheduler: store, Limits: limits})
	if err != nil {
		return nil, err
	}
	o.metrics = m
	return o, nil
}

// observer is the service's Observer: the metrics, or none.
func (o *observability) observer() imagegen.Observer {
	if o.metrics == nil {
		return nil
	}
	return o.metrics
}

// startAdmin serves the admin listener of -admin-addr, if any. It
// returns the address it listens on ("" for none) and the function that
// stops it.
func (o *observability) startAdmin(ctx context.Context, c opsConfig, log *slog.Logger) (string, func(), error) {
	if c.adminAddr == "" {
		return "", func() {}, nil
	}
	// No ShowErrors: the answer names what is down and how in a word;
	// the error's text (host names, parts of a URL) goes to the log only,
	// when the answer changes.
	probes, err := health.New(health.Config{Checks: o.checks, Timeout: time.Second, Logger: log})
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	probes.Register(mux)
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn), Timeout: 10 * time.Second,
	}))
	if c.pprof {
		// Not /debug/pprof/cmdline: the command line may hold secrets
		// given as flags (-signing-key, a -redis URL's password), which
		// anyone who reaches this listener would read.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	ln, err := net.Listen("tcp", c.adminAddr)
	if err != nil {
		return "", nil, fmt.Errorf("-admin-addr: %w", err)
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      2 * time.Minute, // a CPU profile takes 30 s by default
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin listener", "err", err)
		}
	}()
	stop := func() {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
		<-done
	}
	return "http://" + displayAddr(ln.Addr()), stop, nil
}

// durationsAsStrings writes a time.Duration attribute as its String().
func durationsAsStrings(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
