package provider_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/model/provider"
)

// TestSwitchingProtocolsAnswerDoesNotHoldDo: a provider (or a proxy in
// front of it) that answers 101 Switching Protocols and then sends
// nothing. net/http hands such an answer's connection over as its body
// and no longer ends a read of it when the request's context ends (nor
// at the client's Timeout), so Do, reading it as a failure's body, held
// the worker, and the task's lease, renewed all along, for as long as
// the server kept the connection open. Do must give up on it at once,
// whatever the context's deadline, with a failure of that status.
func TestSwitchingProtocolsAnswerDoesNotHoldDo(t *testing.T) {
	url := testenv.SilentUpgrader(t)
	for name, client := range map[string]*http.Client{
		"DefaultHTTPClient":      provider.DefaultHTTPClient(),
		"ContextBoundHTTPClient": provider.ContextBoundHTTPClient(),
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := provider.Do(ctx, client, provider.Get(url+"/v1/result", nil), provider.Policy{Provider: "acme"})
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Do still reads the 101 answer after 5s")
			}
			var me *imagegen.ModelError
			if !errors.As(err, &me) || !contains(me.Err.Error(), "HTTP 101") {
				t.Fatalf("got %v; want the failure of an HTTP 101 answer", err)
			}
		})
	}
}
