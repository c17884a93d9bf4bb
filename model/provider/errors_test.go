package provider_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/provider"
)

func TestNewErrorByStatus(t *testing.T) {
	for _, tc := range []struct {
		status    int
		retryable bool
		msg       string
	}{
		{400, false, provider.MsgRejected},
		{401, false, provider.MsgMisconfigured},
		{403, false, provider.MsgMisconfigured},
		{404, false, provider.MsgMisconfigured},
		{408, true, provider.MsgUnavailable},
		{409, false, provider.MsgRejected},
		{422, false, provider.MsgRejected},
		{429, true, provider.MsgBusy},
		{500, true, provider.MsgUnavailable},
		{502, true, provider.MsgUnavailable},
		{503, true, provider.MsgUnavailable},
		{504, true, provider.MsgUnavailable},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			is := is.New(t)
			e := provider.NewError("acme", tc.status, "internal detail xyz")
			is.Equal(e.Provider, "acme")
			is.Equal(e.Retryable, tc.retryable)
			is.True(!e.Refused && !e.InvalidInput)
			is.Equal(e.Message, tc.msg)
			is.Equal(e.Misconfigured, tc.msg == provider.MsgMisconfigured)              // a fallback chain moves on
			is.True(!strings.Contains(e.UserMessage(), "xyz"))                          // no internals for users
			is.True(strings.Contains(e.Err.Error(), fmt.Sprintf("HTTP %d", tc.status))) // the status, for operators
			is.True(strings.Contains(e.Err.Error(), "internal detail xyz"))
		})
	}
}

func TestNewErrorOptions(t *testing.T) {
	is := is.New(t)

	r := provider.NewError("acme", 400, "blocked", provider.Refusal(), provider.Code("moderation_blocked"))
	is.True(r.Refused && !r.Retryable)
	is.Equal(r.Message, provider.MsgRefused)
	is.Equal(r.UserMessage(), "refused by content policy: "+provider.MsgRefused)
	is.Equal(r.Err.Error(), "HTTP 400 (moderation_blocked): blocked")

	r = provider.NewError("acme", 200, "IMAGE_SAFETY", provider.Refusal("the picture was blocked"), provider.Retry(true))
	is.True(r.Refused && !r.Retryable && !r.Misconfigured) // a refusal is never retried
	is.Equal(r.Message, "the picture was blocked")

	o := provider.NewError("acme", 400, "API key not valid", provider.OperatorError(), provider.Code("API_KEY_INVALID"))
	is.True(!o.Retryable && !o.Refused && o.Misconfigured)
	is.Equal(o.Message, provider.MsgMisconfigured)
	is.Equal(o.Err.Error(), "HTTP 400 (operator error API_KEY_INVALID): API key not valid")

	x := provider.NewError("acme", 429, "quota", provider.Retry(false), provider.UserMessage("no quota left"))
	is.True(!x.Retryable)
	is.Equal(x.Message, "no quota left")

	c := provider.NewError("acme", 503, "", provider.Cause(io.ErrUnexpectedEOF))
	is.True(errors.Is(c, io.ErrUnexpectedEOF))
	is.Equal(c.Err.Error(), "HTTP 503: Service Unavailable: unexpected EOF")
}

func TestNetworkError(t *testing.T) {
	is := is.New(t)
	e := provider.NetworkError("acme", fmt.Errorf("dial: %w", context.DeadlineExceeded))
	is.True(e.Retryable)
	is.Equal(e.Message, provider.MsgTimeout)
	is.True(errors.Is(e, context.DeadlineExceeded))
	e = provider.NetworkError("acme", io.ErrUnexpectedEOF)
	is.True(e.Retryable)
	is.Equal(e.Message, provider.MsgUnavailable)
}

func TestErrorBody(t *testing.T) {
	type apiError struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	known := func(e apiError) bool { return e.Error.Message != "" }
	for _, tc := range []struct {
		name, body string
		ok         bool
		msg        string
	}{
		{"the provider's form", `{"error":{"message":"quota exceeded"}}`, true, "quota exceeded"},
		{"another JSON form", `{"detail":"not found"}`, false, ""},
		{"empty object", `{}`, false, ""},
		{"not JSON", `<html>502 Bad Gateway</html>`, false, ""},
		{"empty", ``, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			e, ok := provider.ErrorBody([]byte(tc.body), known)
			is.Equal(ok, tc.ok)
			is.Equal(e.Error.Message, tc.msg)
		})
	}
}
