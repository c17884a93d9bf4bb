package client_test

import (
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/client"
)

func TestIsTransient(t *testing.T) {
	is := is.New(t)
	noAnswer := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/", Err: errors.New("connection refused")}
	is.True(client.IsTransient(fmt.Errorf("wrapped: %w", &client.APIError{StatusCode: 503})))
	is.True(client.IsTransient(noAnswer))
	is.True(!client.IsTransient(&client.APIError{StatusCode: 404}))
	is.True(!client.IsTransient(&client.APIError{StatusCode: 429}))
	is.True(!client.IsTransient(errors.New("task failed")))
}
