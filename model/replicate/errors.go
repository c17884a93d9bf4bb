package replicate

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// User-facing messages of predictions that ended without output.
const (
	msgFailed   = "the image model failed to generate the image, please retry later"
	msgCanceled = "the image provider cancelled the generation, please retry later"
)

// problem is Replicate's error body (RFC 7807-style):
// {"type"?, "title", "status", "detail", "instance"?}, and for 422
// invalid_fields [{type, field, description}].
type problem struct {
	Type          string `json:"type"`
	Title         string `json:"title"`
	Status        int    `json:"status"`
	Detail        string `json:"detail"`
	InvalidFields []struct {
		Type        string `json:"type"`
		Field       string `json:"field"`
		Description string `json:"description"`
	} `json:"invalid_fields"`
}

// known reports whether p is a problem body (for provider.ErrorBody).
func (p problem) known() bool { return p.Title != "" || p.Detail != "" }

// classify maps a failed answer:
//
//	401, 403, 404 (token, access, model name)   operator error (provider.NewError)
//	402 (billing required, credit exhausted)    operator error
//	4xx whose detail reads as a refusal         refused
//	422 on a reference image input              invalid input
//	429, 5xx                                    retryable (Retry-After honoured by Do)
//	other 4xx                                   rejected, not retried
func classify(f provider.Failure) *imagegen.ModelError {
	p, ok := provider.ErrorBody(f.Body, problem.known)
	if !ok {
		return provider.NewError(Provider, f.Status, provider.Snippet(f.Body))
	}
	msg := strings.TrimSpace(p.Detail)
	if p.Title != "" {
		msg = strings.TrimSuffix(p.Title+": "+msg, ": ")
	}
	var opts []provider.ErrorOption
	for _, fld := range p.InvalidFields {
		opts = append(opts, provider.Code(fld.Field+" "+fld.Type))
		msg += "; " + fld.Field + ": " + fld.Description
	}
	switch {
	case f.Status == http.StatusPaymentRequired:
		opts = append(opts, provider.OperatorError())
	case f.Status >= 400 && f.Status < 500 && f.Status != http.StatusTooManyRequests && refusal(msg):
		opts = append(opts, provider.Refusal())
	case f.Status == http.StatusUnprocessableEntity && referenceField(p):
		opts = append(opts, provider.InvalidInput("the reference image could not be used by the image provider"))
	}
	return provider.NewError(Provider, f.Status, msg, opts...)
}

// referenceField reports whether a 422 names an input that holds an
// image (input_image, image, image_input, ...).
func referenceField(p problem) bool {
	for _, f := range p.InvalidFields {
		if strings.Contains(strings.ToLower(f.Field+" "+f.Description), "image") {
			return true
		}
	}
	return false
}

// refusal reports whether a prediction's error or a problem's detail
// reads as a content refusal ("NSFW content detected", "flagged as
// sensitive").
func refusal(text string) bool {
	text = strings.ToLower(text)
	for _, w := range []string{"nsfw", "flagged", "sensitive content", "content policy", "moderation", "safety filter", "safety checker", "safety system"} {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

// failure is the error of a prediction that ended without output:
//
//	failed, its error reads as a refusal   refused (never retried)
//	failed otherwise                       retryable: the model broke (out of memory, interrupted)
//	canceled                               retryable: cancelled at the provider (or its deadline hit while running)
//	aborted                                retryable: ended before it ran (busy)
//
// Replicate's error goes to the logged cause only.
func (p *prediction) failure() *imagegen.ModelError {
	reason := ""
	if p.Error != nil {
		reason = *p.Error
	}
	cause := fmt.Errorf("prediction %s %s: %s", p.ID, p.Status, cmp.Or(strings.TrimSpace(reason), "no error given"))
	e := &imagegen.ModelError{Provider: Provider, Retryable: true, Err: cause}
	switch {
	case p.Status == statusFailed && refusal(reason):
		e.Retryable, e.Refused, e.Message = false, true, provider.MsgRefused
	case p.Status == statusFailed:
		e.Message = msgFailed
	case p.Status == statusCanceled:
		e.Message = msgCanceled
	default: // aborted
		e.Message = provider.MsgBusy
	}
	return e
}

// retryDelay is the delay a 429's detail asks for, "Request was
// throttled. Your rate limit resets in ~30s.", for when Retry-After is
// missing.
func retryDelay(f provider.Failure) (time.Duration, bool) {
	if f.Status != http.StatusTooManyRequests {
		return 0, false
	}
	p, ok := provider.ErrorBody(f.Body, problem.known)
	if !ok {
		return 0, false
	}
	_, rest, ok := strings.Cut(p.Detail, "resets in ")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(strings.TrimPrefix(rest, "~"), "s")
	s, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || s < 0 || s > 1e6 {
		return 0, false
	}
	return time.Duration(s * float64(time.Second)), true
}
