package fal

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// Queue statuses, as fal's queue documentation and its JavaScript
// client (fal-ai/fal-js) give them. A failed or cancelled request also
// ends as COMPLETED, with error and error_type set.
const (
	statusInQueue    = "IN_QUEUE"
	statusInProgress = "IN_PROGRESS"
	statusCompleted  = "COMPLETED"
)

// cancelTimeout bounds the cancel call, made after our context ended.
const cancelTimeout = 5 * time.Second

// queueStatus is the answer of submit and of status.
type queueStatus struct {
	Status        string          `json:"status"`
	RequestID     string          `json:"request_id"`
	ResponseURL   string          `json:"response_url"`
	StatusURL     string          `json:"status_url"`
	CancelURL     string          `json:"cancel_url"`
	QueuePosition *int            `json:"queue_position"`
	Error         json.RawMessage `json:"error"` // a message, when a COMPLETED request failed
	ErrorType     string          `json:"error_type"`
}

// failed reports whether a COMPLETED status says the request failed.
func (s queueStatus) failed() bool {
	e := strings.TrimSpace(string(s.Error))
	return s.ErrorType != "" || (e != "" && e != "null" && e != `""`)
}

// job is a submitted request and where to ask about it.
type job struct {
	id                              string
	statusURL, resultURL, cancelURL string
}

// submit queues the generation and returns its job.
func (m *Model) submit(ctx context.Context, in input) (job, error) {
	build, err := provider.PostJSON(m.client.URL("/"+m.cfg.Model), in, m.header())
	if err != nil {
		return job{}, &imagegen.ModelError{Provider: Provider, Message: provider.MsgMisconfigured, Err: err}
	}
	resp, err := m.client.Do(ctx, build)
	if err != nil {
		return job{}, err
	}
	var s queueStatus
	if err := provider.DecodeJSON(Provider, resp, &s); err != nil {
		return job{}, err
	}
	if s.RequestID == "" || url.PathEscape(s.RequestID) != s.RequestID {
		return job{}, provider.BadAnswer(Provider, true, fmt.Errorf("submit answered request_id %q", s.RequestID))
	}
	return m.job(s), nil
}

// job takes the URLs the submit answered when they are under BaseURL,
// and otherwise builds them (status, result and cancel use owner/app,
// without the endpoint's path), so the key never goes to another host.
func (m *Model) job(s queueStatus) job {
	base := m.client.URL("/" + m.app + "/requests/" + s.RequestID)
	return job{
		id:        s.RequestID,
		statusURL: m.ours(s.StatusURL, base+"/status"),
		resultURL: m.ours(s.ResponseURL, base),
		cancelURL: m.ours(s.CancelURL, base+"/cancel"),
	}
}

func (m *Model) ours(got, fallback string) string {
	u, err := url.Parse(got)
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" || !strings.HasPrefix(got, m.client.BaseURL+"/") {
		return fallback
	}
	return got
}

// await polls the job's status every PollInterval (on the client's
// clock) until it is COMPLETED, then fetches its result. When it stops
// before (our context ended, the deadline would pass before the next
// poll, a failure), it asks fal to cancel the request.
func (m *Model) await(ctx context.Context, j job) (*provider.Response, error) {
	done := false
	defer func() {
		if !done {
			m.cancel(ctx, j)
		}
	}()
	last := statusInQueue
	for {
		resp, err := m.client.Do(ctx, provider.Get(j.statusURL+"?logs=0", m.header()))
		if err != nil {
			return nil, err
		}
		var s queueStatus
		if err := provider.DecodeJSON(Provider, resp, &s); err != nil {
			return nil, err
		}
		m.logStatus(ctx, j, s)
		switch s.Status {
		case statusCompleted:
			done = true
			return m.result(ctx, j, s)
		case statusInQueue, statusInProgress:
			last = s.Status
		default:
			return nil, provider.BadAnswer(Provider, true, fmt.Errorf("request %s: unknown status %q", j.id, s.Status))
		}
		if err := provider.Wait(ctx, m.client.Policy.Clock, m.cfg.PollInterval); err != nil {
			return nil, provider.Unfinished(Provider, fmt.Sprintf("request %s still %s", j.id, last), err)
		}
	}
}

// logStatus logs a poll's answer at debug level.
func (m *Model) logStatus(ctx context.Context, j job, s queueStatus) {
	attrs := []any{"request_id", j.id, "status", s.Status}
	if s.QueuePosition != nil {
		attrs = append(attrs, "queue_position", *s.QueuePosition)
	}
	m.log.DebugContext(ctx, "fal: request status", attrs...)
}

// result fetches a COMPLETED request's output. When the status says the
// request failed, the result answers that failure (its status and
// body); the same call would answer it again, so it is not retried here
// (the error still says whether a new generation may do better).
func (m *Model) result(ctx context.Context, j job, s queueStatus) (*provider.Response, error) {
	build := provider.Get(j.resultURL, m.header())
	if !s.failed() {
		return m.client.Do(ctx, build)
	}
	p := m.client.Policy
	p.MaxRetries = 0
	return provider.Do(ctx, m.client.HTTP, build, p)
}

// cancel asks fal to cancel the job, once, with a context of its own (ours
// has ended, most often), and logs the outcome. A request that already
// completed answers 400 ALREADY_COMPLETED, which is fine.
func (m *Model) cancel(ctx context.Context, j job) {
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	p := m.client.Policy
	p.MaxRetries = 0
	resp, err := provider.Do(cctx, m.client.HTTP, provider.Put(j.cancelURL, m.header()), p)
	if err != nil {
		m.log.WarnContext(cctx, "fal: cancelling the request failed", "request_id", j.id, "err", err)
		return
	}
	var s queueStatus
	_ = json.Unmarshal(resp.Body, &s)
	m.log.InfoContext(cctx, "fal: request cancelled", "request_id", j.id, "status", s.Status)
}
