package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
)

// The client commands (generate, tasks) read the API key only from the
// environment: a flag's value shows in ps and in shell history.
const (
	envAPIKey     = "IMAGEGEN_API_KEY"
	envServer     = "IMAGEGEN_SERVER"
	defaultServer = "http://127.0.0.1:8080"
)

// apiFlags are the flags every client command shares.
type apiFlags struct {
	server string
}

func (a *apiFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.server, "server", "", "base URL of the imagegen server (default $"+envServer+", else "+defaultServer+"); the API key is read from $"+envAPIKey)
}

// newAPIClient returns a client of the server of a (or $IMAGEGEN_SERVER),
// authenticated with $IMAGEGEN_API_KEY, with opts added.
func newAPIClient(a apiFlags, getenv func(string) string, opts ...client.Option) (*client.Client, string, error) {
	server := cmp.Or(a.server, getenv(envServer), defaultServer)
	key := strings.TrimSpace(getenv(envAPIKey))
	if key == "" {
		return nil, server, fmt.Errorf("set %s to your API key (it is not taken as a flag, so that it does not show in ps)", envAPIKey)
	}
	c, err := client.New(server, key, append([]client.Option{client.WithUserAgent("imagegen-cli")}, opts...)...)
	if err != nil {
		from := "-server"
		if a.server == "" {
			from = envServer
		}
		return nil, server, fmt.Errorf("%s: %w", from, err)
	}
	return c, server, nil
}

// userError is an error told in the user's terms; it still wraps the
// original, so errors.Is and errors.As see through it.
type userError struct {
	msg string
	err error
}

func (e *userError) Error() string { return e.msg }
func (e *userError) Unwrap() error { return e.err }

// explain turns an error of the client into the server's own message,
// with a hint where one helps. Other errors are returned as they are.
func explain(err error, server string) error {
	var apiErr *client.APIError
	dial := failedDial(err)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &apiErr):
		msg := tableCell(apiErr.Message) // the server's (or a proxy's) words, control characters escaped
		switch {
		case errors.Is(err, imagegen.ErrUnauthorized):
			msg = fmt.Sprintf("the server refused the API key in %s: %s", envAPIKey, msg)
		case errors.Is(err, imagegen.ErrRateLimited) && apiErr.RetryAfter > 0:
			msg = fmt.Sprintf("%s (retry after %v)", msg, apiErr.RetryAfter)
		case errors.Is(err, imagegen.ErrInsufficientCredits),
			errors.Is(err, imagegen.ErrTaskNotFound),
			errors.Is(err, imagegen.ErrInvalidParams),
			errors.Is(err, imagegen.ErrRateLimited):
		default:
			msg = fmt.Sprintf("the server answered %d %s: %s", apiErr.StatusCode, tableCell(apiErr.Code), msg)
		}
		return &userError{msg: msg, err: err}
	case dial != nil:
		return &userError{msg: fmt.Sprintf("cannot reach the server at %s (set -server or %s): %v", server, envServer, dial.Err), err: err}
	}
	return err
}

// failedDial returns the error of a connection to the server that was
// never made (its dial failed: nothing was sent), or nil.
func failedDial(err error) *net.OpError {
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return opErr
	}
	return nil
}
