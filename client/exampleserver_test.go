package client_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
)

// exampleServer runs the standard stack on a loopback test server (the
// memory store, a scripted model costing 1 credit), with its workers
// running until ctx ends. close stops the test server.
func exampleServer(ctx context.Context) (srv *server.Server, baseURL string, close func(), err error) {
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	srv, err = server.New(ctx, server.Config{
		Service:   imagegen.Config{Store: memory.New(memory.Config{}), Model: imagegentest.NewModel(1), Logger: slog.New(slog.DiscardHandler)},
		PublicURL: ts.URL,
	})
	if err != nil {
		ts.Close()
		return nil, "", nil, err
	}
	srv.Register(mux)
	go func() { _ = srv.Run(ctx) }()
	return srv, ts.URL, ts.Close, nil
}
