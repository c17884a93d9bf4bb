package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// openAIError is OpenAI's ErrorResponse: {"error":{"message","type",
// "param","code"}}, param and code null when they do not apply.
type openAIError struct {
	status int
	// final marks an answer that a retry must not follow
	// (x-should-retry: false) beside those write knows by status.
	final bool
	Error openAIErrorDetail `json:"error"`
}

type openAIErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func newOpenAIError(status int, typ, param, code, message string) *openAIError {
	e := &openAIError{status: status, Error: openAIErrorDetail{Message: message, Type: typ}}
	if param != "" {
		e.Error.Param = &param
	}
	if code != "" {
		e.Error.Code = &code
	}
	return e
}

func invalidOpenAI(param, message, code string) *openAIError {
	return newOpenAIError(http.StatusBadRequest, "invalid_request_error", param, code, message)
}

// write sends the error. Answers that a retry cannot change say so
// (x-should-retry: false), so that OpenAI SDKs do not retry them.
func (e *openAIError) write(w http.ResponseWriter) {
	if e.final || e.status == http.StatusTooManyRequests && e.Error.Type == "insufficient_quota" || e.status == http.StatusGatewayTimeout {
		w.Header().Set("X-Should-Retry", "false")
	}
	encode(w, e.status, e)
}

// openAIErr maps a service error to OpenAI's shapes.
func (h *Handler) openAIErr(w http.ResponseWriter, r *http.Request, err error) {
	var ve *imagegen.ValidationError
	var uncancelled *uncancelledError
	switch {
	case errors.As(err, &uncancelled): // before the reasons it wraps, whose answers say the task was cancelled
		openAIUncancelled(uncancelled).write(w)
	case errors.As(err, &ve):
		invalidOpenAI(ve.Field, ve.Message, "invalid_value").write(w)
	case errors.Is(err, imagegen.ErrInsufficientCredits):
		newOpenAIError(http.StatusTooManyRequests, "insufficient_quota", "", "insufficient_quota",
			"You do not have enough credits for this generation.").write(w)
	case errors.Is(err, imagegen.ErrQueueFull):
		w.Header().Set("Retry-After", strconv.FormatInt(RetryAfterSeconds(imagegen.QueueFullRetryAfter), 10))
		newOpenAIError(http.StatusTooManyRequests, "requests", "", "rate_limit_exceeded", imagegen.QueueFullMessage).write(w)
	case errors.Is(err, errOpenAIDraining):
		w.Header().Set("Retry-After", "1") // OpenAI's SDKs retry a 503 by themselves: on another instance
		newOpenAIError(http.StatusServiceUnavailable, "server_error", "", "server_shutting_down",
			"The server is restarting; the task was cancelled and its credits refunded. Retry the request.").write(w)
	case errors.Is(err, errOpenAITimeout):
		newOpenAIError(http.StatusGatewayTimeout, "server_error", "", "timeout",
			"The image was not ready in time; the task was cancelled and its credits refunded.").write(w)
	case r.Context().Err() != nil:
		// The caller has gone; nobody reads the answer.
		w.WriteHeader(statusClientClosed)
	default:
		h.cfg.Logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		newOpenAIError(http.StatusInternalServerError, "server_error", "", "", "The server had an error while processing your request.").write(w)
	}
}

// waitsRetryAfter is the Retry-After of an OpenAI request refused for
// the owner's open waits: one of them will likely have ended by then.
const waitsRetryAfter = 2 * time.Second

// openAITooManyWaits refuses an OpenAI request whose owner already holds
// Config.MaxWaitsPerOwner long waits: OpenAI's rate-limit 429, which its
// SDKs retry after Retry-After. Nothing was submitted.
func openAITooManyWaits(w http.ResponseWriter, max int) {
	w.Header().Set("Retry-After", strconv.FormatInt(RetryAfterSeconds(waitsRetryAfter), 10))
	newOpenAIError(http.StatusTooManyRequests, "requests", "", "rate_limit_exceeded",
		"You already have "+strconv.Itoa(max)+" requests waiting for images on this server; nothing was submitted or charged. Try again when one of them has answered.").write(w)
}

// openAIImageUnreadable is the answer for a task that succeeded, charged,
// whose image could not be read for a b64_json answer (the image store
// failing): a 500 that says not to retry, since a retry submits and
// charges again, and names the task, whose images the native API serves
// (GET /api/v1/tasks/{id}) once the image store is back.
func openAIImageUnreadable(taskID string) *openAIError {
	e := newOpenAIError(http.StatusInternalServerError, "server_error", "", "",
		"The image was generated and charged, but could not be read from the image store; do not retry. Fetch it later through task "+taskID+".")
	e.final = true
	return e
}

// openAIUncancelled is the answer for a task the endpoint gave up on
// (out of time, at shutdown, or when its wait failed) and could not
// cancel: the answer its reason has, but final (x-should-retry: false,
// no Retry-After), since a retry submits and charges again while this
// task may still run, charged; it names the task, whose result the
// native API serves (GET /api/v1/tasks/{id}).
func openAIUncancelled(e *uncancelledError) *openAIError {
	status, code, reason := http.StatusInternalServerError, "", "The server had an error while waiting for the image"
	switch {
	case errors.Is(e.why, errOpenAITimeout):
		status, code, reason = http.StatusGatewayTimeout, "timeout", "The image was not ready in time"
	case errors.Is(e.why, errOpenAIDraining):
		status, code, reason = http.StatusServiceUnavailable, "server_shutting_down", "The server is restarting"
	}
	oe := newOpenAIError(status, "server_error", "", code,
		reason+", and its task could not be cancelled: it may still run and be charged; do not retry. Fetch its result later through task "+e.id+".")
	oe.final = true
	return oe
}

// openAITaskFailed is the answer for a task that failed: a refusal is
// OpenAI's content_policy_violation (400); anything else a server error
// (500), which SDKs retry: a failed task is refunded, so a retry costs
// nothing more.
func openAITaskFailed(t *imagegen.Task) *openAIError {
	if t.ErrorCode == imagegen.CodeContentPolicy {
		return newOpenAIError(http.StatusBadRequest, "invalid_request_error", "", "content_policy_violation", t.Error)
	}
	return newOpenAIError(http.StatusInternalServerError, "server_error", "", string(t.ErrorCode), "The image could not be generated: "+t.Error)
}

// openAIErrors rewrites the error answers of the shared middleware
// (authentication, rate limit, method, body size) from this API's
// {"error":{"code","message"}} to OpenAI's shapes; answers already in
// OpenAI's shape, and every success, pass through as they are.
func openAIErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &errorCapture{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		cw.finish()
	})
}

// errorCapture holds back the body of an error answer until finish.
type errorCapture struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *errorCapture) WriteHeader(status int) {
	if status >= 400 && c.status == 0 {
		c.status = status
		return
	}
	c.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the connection's writer
// (the OpenAI handler moves its write deadline).
func (c *errorCapture) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (c *errorCapture) Write(b []byte) (int, error) {
	if c.status != 0 {
		return c.body.Write(b)
	}
	return c.ResponseWriter.Write(b)
}

func (c *errorCapture) finish() {
	if c.status == 0 {
		return
	}
	var ours wire.ErrorBody
	var probe struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(c.body.Bytes(), &probe)
	if _, theirs := probe.Error["type"]; theirs || json.Unmarshal(c.body.Bytes(), &ours) != nil || ours.Error.Code == "" {
		c.ResponseWriter.WriteHeader(c.status)
		_, _ = c.ResponseWriter.Write(c.body.Bytes())
		return
	}
	status, typ, code := c.status, "invalid_request_error", string(ours.Error.Code)
	switch ours.Error.Code {
	case wire.APIUnauthorized:
		code = "invalid_api_key"
	case wire.APIRateLimitExceeded:
		typ = "requests"
	case wire.APIInternalError:
		typ, code = "server_error", ""
	}
	newOpenAIError(status, typ, "", code, ours.Error.Message).write(c.ResponseWriter)
}
