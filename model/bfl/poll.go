package bfl

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// Task statuses of GET /v1/get_result (StatusResponse).
const (
	statusPending          = "Pending"
	statusReady            = "Ready"
	statusRequestModerated = "Request Moderated"
	statusContentModerated = "Content Moderated"
	statusError            = "Error"
	statusTaskNotFound     = "Task not found"
)

// User-facing messages of tasks that ended without an image.
const (
	msgFailed   = "the image model failed to generate the image, please retry later"
	msgRefusedO = "the generated image was withheld by the provider's moderation"
)

// result is the answer of GET /v1/get_result (ResultResponse).
type result struct {
	ID       string   `json:"id"`
	Status   string   `json:"status"`
	Progress *float64 `json:"progress"`
	Result   *struct {
		Sample string `json:"sample"`
		Seed   *int64 `json:"seed"`
	} `json:"result"`
	Details map[string]any `json:"details"`
}

// apiHost reports whether host is one of the API's own hosts:
// api.bfl.ai and its regional api.*.bfl.ai (api.us1.bfl.ai, api.eu.bfl.ai).
func apiHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "api.bfl.ai" || strings.HasPrefix(host, "api.") && strings.HasSuffix(host, ".bfl.ai") && !strings.Contains(strings.TrimSuffix(strings.TrimPrefix(host, "api."), ".bfl.ai"), ".")
}

// pollURL is where a task's result is read: the polling_url the submit
// answered when it is https on one of the API's own hosts, or on the
// configured base URL's scheme and host (a proxy, a fake), and reads
// /v1/get_result; else the base URL's /v1/get_result?id=. A spoofed
// polling_url never makes the adapter call, and send the key, elsewhere.
func (m *Model) pollURL(a *asyncResponse) string {
	if u, err := url.Parse(a.PollingURL); err == nil && u.User == nil && u.Fragment == "" && strings.HasSuffix(u.Path, "/v1/get_result") {
		own := u.Scheme == "https" && u.Port() == "" && apiHost(u.Hostname())
		configured := u.Scheme == m.base.Scheme && u.Host == m.base.Host
		if own || configured {
			return u.String()
		}
	}
	return m.client.URL("/v1/get_result?id=" + url.QueryEscape(a.ID))
}

// await polls the task's result every PollInterval, on the client's
// clock, until it is no longer Pending; it reports progress to g as the
// API gives it. A Ready result with a sample is returned; every other
// end is an error.
func (m *Model) await(ctx context.Context, a *asyncResponse, g imagegen.Generation) (*result, error) {
	get := provider.Get(m.pollURL(a), m.header())
	status := statusPending
	for {
		if err := provider.Wait(ctx, m.client.Policy.Clock, m.cfg.PollInterval); err != nil {
			return nil, provider.Unfinished(Provider, fmt.Sprintf("task %s still %s", a.ID, status), err)
		}
		resp, err := m.client.Do(ctx, get)
		if err != nil {
			return nil, err
		}
		var r result
		if err := provider.DecodeJSON(Provider, resp, &r); err != nil {
			return nil, err
		}
		status = r.Status
		switch r.Status {
		case statusPending:
			if r.Progress != nil {
				g.ReportProgress(fraction(*r.Progress))
			}
			continue
		case statusReady:
			if r.Result == nil || r.Result.Sample == "" {
				return nil, provider.BadAnswer(Provider, true, fmt.Errorf("task %s is Ready without result.sample", a.ID))
			}
			return &r, nil
		}
		return nil, ended(a.ID, &r)
	}
}

// fraction reads the API's progress: a fraction of 1, or a percentage
// when above 1.
func fraction(p float64) float64 {
	if p > 1 {
		return p / 100
	}
	return p
}

// ended is the error of a task that ended without an image:
//
//	Request Moderated    the prompt or input image was refused: Refused
//	Content Moderated    the generated image was withheld: Refused
//	Error                the model failed: retryable
//	Task not found       the task is gone (expired, or another region's): retryable
//	anything else        an answer the adapter cannot use: retryable
func ended(id string, r *result) *imagegen.ModelError {
	cause := fmt.Errorf("task %s: %s", id, r.Status)
	if len(r.Details) > 0 {
		cause = fmt.Errorf("%w (details %v)", cause, r.Details)
	}
	switch r.Status {
	case statusRequestModerated:
		return &imagegen.ModelError{Provider: Provider, Refused: true, Message: provider.MsgRefused, Err: cause}
	case statusContentModerated:
		return &imagegen.ModelError{Provider: Provider, Refused: true, Message: msgRefusedO, Err: cause}
	case statusError, statusTaskNotFound:
		return &imagegen.ModelError{Provider: Provider, Retryable: true, Message: msgFailed, Err: cause}
	}
	return provider.BadAnswer(Provider, true, fmt.Errorf("task %s has status %q", id, r.Status))
}
