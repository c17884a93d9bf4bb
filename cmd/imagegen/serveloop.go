package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// shutdownGrace is how long serve's HTTP server waits for open requests
// once asked to stop.
const shutdownGrace = 30 * time.Second

// serveUntil serves srv on ln and runs run (the workers and callbacks)
// beside it until ctx ends or the server fails, whichever comes first.
// Then it shuts the server down gracefully (within shutdownGrace), stops
// run by ending its context, waits for it and returns both errors; a
// server closed by the shutdown is no error. A server that fails while
// ctx is live (its listener broke) stops run too: serve exits with the
// error instead of waiting for a signal that may never come.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener, run func(context.Context) error, log *slog.Logger) error {
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	ran := make(chan error, 1)
	go func() { ran <- run(runCtx) }()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-served:
		log.Error("serving failed; stopping", "err", err)
		stopRun()
	case <-ctx.Done():
		log.Info("shutting down")
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		err = srv.Shutdown(shutdownCtx)
		cancel()
	}
	runErr := <-ran
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, runErr)
}
