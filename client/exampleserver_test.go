package client_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
)

// exampleServer runs the standard stack on a loopback test server (the
// memory store, a scripted model costing 1 credit), with its workers
// running until stop, and makes the user "alice" with credits; key is
// her API key. stop ends the workers and the test server.
func exampleServer(credits int64) (srv *server.Server, baseURL, key string, stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	stop = func() { cancel(); ts.Close() }
	store, err := memory.New(memory.Config{})
	if err != nil {
		stop()
		return nil, "", "", nil, err
	}
	srv, err = server.New(ctx, server.Config{
		Service:   imagegen.Config{Store: store, Model: imagegentest.NewModel(1), Logger: slog.New(slog.DiscardHandler)},
		PublicURL: ts.URL,
	})
	if err == nil {
		key, _, err = srv.Service().CreateKey(ctx, "alice")
	}
	if err == nil && credits > 0 {
		_, err = srv.Service().Grant(ctx, "alice", credits, uuid.NewString())
	}
	if err != nil {
		stop()
		return nil, "", "", nil, err
	}
	srv.Register(mux)
	go func() { _ = srv.Run(ctx) }()
	return srv, ts.URL, key, stop, nil
}
