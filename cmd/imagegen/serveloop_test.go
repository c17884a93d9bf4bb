package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// brokenListener fails every Accept, as a listener whose socket broke.
type brokenListener struct{ net.Listener }

var errBroken = errors.New("listener broke")

func (brokenListener) Accept() (net.Conn, error) { return nil, errBroken }

// TestServeUntilStopsWhenServingFails: the server failing while the
// context is live stops the workers' run and returns the failure, where
// serve used to wait for the workers, which wait for a signal.
func TestServeUntilStopsWhenServingFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	runStopped := make(chan struct{})
	run := func(ctx context.Context) error {
		<-ctx.Done()
		close(runStopped)
		return nil
	}
	done := make(chan error, 1)
	go func() {
		done <- serveUntil(t.Context(), &http.Server{}, brokenListener{ln}, run, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errBroken) {
			t.Fatalf("serveUntil = %v, want the listener's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serveUntil did not return after the server failed")
	}
	select {
	case <-runStopped:
	default:
		t.Fatal("serveUntil returned before the run stopped")
	}
}

// TestServeUntilShutsDownOnCancel: the context ending shuts the server
// down (no error) and stops the run, whose error is returned.
func TestServeUntilShutsDownOnCancel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errRun := errors.New("run's error")
	run := func(ctx context.Context) error {
		<-ctx.Done()
		return errRun
	}
	done := make(chan error, 1)
	go func() {
		done <- serveUntil(ctx, &http.Server{}, ln, run, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	cancel()
	if err := <-done; !errors.Is(err, errRun) || errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("serveUntil = %v, want only the run's error", err)
	}
}
