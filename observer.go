package imagegen

import (
	"context"
	"errors"
	"time"
)

// Observer is told what the service and its front ends do, so that an
// embedder can count it; package metrics implements it for Prometheus.
// It is the one observer of the stack: imagegen.Config, httpapi.Config
// and webhook.Config each take it (server.New passes the service's to
// the other two). Its methods are called on the hot paths: they must be
// quick, must not block, and must be safe for concurrent use. Labels
// passed to it are low-cardinality (scenes, model and provider names,
// statuses, codes, route patterns): never a user id, task id or key.
// Embed NopObserver to implement only some methods.
type Observer interface {
	// TaskSubmitted: a task was created and cost credits were charged.
	TaskSubmitted(scene Scene, model string, cost int64)
	// TaskClaimed: a worker took a task that had waited queued since it
	// became ready (submitted, or its retry delay ended).
	TaskClaimed(model string, queued time.Duration)
	// TaskFinished: a task reached success or failed in this process:
	// its worker stored the outcome, a cancel was stored (by its owner or
	// an operator), or lease recovery (Service.Recover) failed it with
	// CodeInternal because its workers kept dying. generation is how
	// long its last attempt ran; 0 when that is not known (a cancel, a
	// lease recovery).
	TaskFinished(model string, status Status, code ErrorCode, generation time.Duration)
	// CreditsRefunded: a failed or cancelled task's cost was given back.
	// A failure of a task that an operator retried free of charge gives
	// nothing back, and is not reported.
	CreditsRefunded(credits int64)
	// CreditsCharged: an operator charged a failed task's cost again to
	// retry it (Inspector.Retry with recharge). The charge at submit is
	// TaskSubmitted's cost; together they are every credit charged.
	CreditsCharged(credits int64)
	// ProviderRequest: one generation call to a provider ended with
	// outcome (see ProviderOutcome).
	ProviderRequest(provider, outcome string)
	// Fallback: a fallback chain moved on from one model to the next.
	Fallback(from, to string)
	// HTTPRequest: the HTTP API (package httpapi) answered a request.
	// route is the matched route pattern (such as
	// "GET /api/v1/tasks/{task_id}"), never the raw path; code 429 is a
	// rate-limited request.
	HTTPRequest(route string, code int, took time.Duration)
	// WebhookDelivery: a callback delivery attempt (package webhook)
	// ended with outcome: "delivered", "retry" (failed, will be tried
	// again), "given_up" (failed MaxAttempts times, or answered 410
	// Gone), "dropped" (the task expired first) or "not_sent" (failed on
	// our side before anything was sent; not counted as an attempt).
	WebhookDelivery(outcome string)
}

// NopObserver is an Observer that does nothing.
type NopObserver struct{}

// TaskSubmitted does nothing.
func (NopObserver) TaskSubmitted(Scene, string, int64) {}

// TaskClaimed does nothing.
func (NopObserver) TaskClaimed(string, time.Duration) {}

// TaskFinished does nothing.
func (NopObserver) TaskFinished(string, Status, ErrorCode, time.Duration) {}

// CreditsRefunded does nothing.
func (NopObserver) CreditsRefunded(int64) {}

// CreditsCharged does nothing.
func (NopObserver) CreditsCharged(int64) {}

// ProviderRequest does nothing.
func (NopObserver) ProviderRequest(string, string) {}

// Fallback does nothing.
func (NopObserver) Fallback(string, string) {}

// HTTPRequest does nothing.
func (NopObserver) HTTPRequest(string, int, time.Duration) {}

// WebhookDelivery does nothing.
func (NopObserver) WebhookDelivery(string) {}

// Provider request outcomes, as ProviderOutcome names them.
const (
	OutcomeSuccess       = "success"
	OutcomeRefused       = "refused"
	OutcomeInvalidInput  = "invalid_input"
	OutcomeMisconfigured = "misconfigured"
	OutcomeUnavailable   = "unavailable" // retryable: rate limit, 5xx, network
	OutcomeTimeout       = "timeout"
	OutcomeCancelled     = "cancelled"
	OutcomeError         = "error"
)

// ProviderOutcome names the outcome of one generation call: success,
// refused, invalid_input, misconfigured, unavailable, timeout, cancelled
// or error.
func ProviderOutcome(err error) string {
	var me *ModelError
	switch {
	case err == nil:
		return OutcomeSuccess
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCancelled
	case !errors.As(err, &me):
		return OutcomeError
	case me.Refused:
		return OutcomeRefused
	case me.InvalidInput:
		return OutcomeInvalidInput
	case me.Misconfigured:
		return OutcomeMisconfigured
	case me.Retryable:
		return OutcomeUnavailable
	}
	return OutcomeError
}

// GenerationEvents is told what happens inside Model.Generate. Routing
// models (model/route) report each provider they call and each fallback
// through Generation.Events; the service logs them with the task's id
// and request id and passes them to its Observer. A model that reports
// nothing is counted as one provider request under the task's model.
type GenerationEvents interface {
	// ProviderAnswered: the named provider's call ended with err (nil
	// for success).
	ProviderAnswered(provider string, err error)
	// FellBack: the chain moves on from one model to the next after err.
	FellBack(from, to string, err error)
}
