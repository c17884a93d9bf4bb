package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/retry"
	"github.com/imagegen/imagegen/internal/urlredact"
	"github.com/imagegen/imagegen/wire"
)

// Defaults of the options.
const (
	DefaultPollInterval    = time.Second     // Wait's first interval
	DefaultMaxPollInterval = 6 * time.Second // Wait's interval doubles up to this
	DefaultLongPoll        = 25 * time.Second
	DefaultTimeout         = time.Minute // of the default http.Client, per request
	DefaultUserAgent       = "imagegen-go-client"
	DefaultMaxDownload     = 64 << 20 // bytes Download writes at most
)

// maxTransient is how many server errors (5xx) or network errors in a row
// Wait tolerates before it returns the error.
const maxTransient = 3

// maxSubmitTries bounds Generate's submits that meet a 429.
const maxSubmitTries = 4

// maxBody bounds the JSON answers the client reads.
const maxBody = 1 << 20

// Task is a task as the API shows it (docs/api.md, "Query a task").
type Task struct {
	TaskID string          `json:"task_id"`
	Status imagegen.Status `json:"status"`
	Images []string        `json:"images,omitempty"` // image URLs, when Status is success
	Error  string          `json:"error,omitempty"`  // failure reason for people, when Status is failed
	// ErrorCode is the failure reason for programs, when Status is failed
	// (an optional extension: "" from a server without it). One of
	// imagegen.CodeContentPolicy, CodeInvalidImageInput, CodeTimeout,
	// CodeProviderError, CodeCancelled, CodeInternal.
	ErrorCode imagegen.ErrorCode `json:"error_code,omitempty"`

	// The full view's details (an optional extension), present when the
	// client was made WithFullView and the server has the extension.
	CreatedAt  *time.Time `json:"created_at,omitempty"`  // when the task was submitted
	StartedAt  *time.Time `json:"started_at,omitempty"`  // when a worker first took it
	FinishedAt *time.Time `json:"finished_at,omitempty"` // when it reached success or failed
	Model      string     `json:"model,omitempty"`       // the model that ran or will run it
	// Seed is the seed the model was given (once it succeeded, the one
	// the provider reports it used, when another); nil when it takes none.
	Seed *int64 `json:"seed,omitempty"`
	// QueuePosition, while the task is pending, is how many pending
	// tasks are ahead of it.
	QueuePosition *int `json:"queue_position,omitempty"`
	// EstimatedStartAt, while the task is pending and tasks started
	// lately, is when it may start: its queue position at the recent
	// rate of starts (an estimate).
	EstimatedStartAt *time.Time `json:"estimated_start_at,omitempty"`
	// Progress, while the task is processing on a model that reports
	// it, is how far its generation has come, from 0 to 1.
	Progress *float64 `json:"progress,omitempty"`
}

// Err returns nil unless the task failed, and then an error wrapping
// ErrTaskFailed with the task's failure reason (and code, if any).
func (t *Task) Err() error {
	if t.Status != imagegen.StatusFailed {
		return nil
	}
	if t.ErrorCode != "" {
		return fmt.Errorf("%w: task %s: %s (%s)", ErrTaskFailed, t.TaskID, t.Error, t.ErrorCode)
	}
	return fmt.Errorf("%w: task %s: %s", ErrTaskFailed, t.TaskID, t.Error)
}

// Client calls the API with one API key. It is safe for concurrent use,
// and its goroutines share the key's rate limit (see the package docs).
type Client struct {
	base      string // scheme, host and API prefix, no trailing slash
	cred      *credential
	hc        *http.Client
	userAgent string
	pollMin   time.Duration
	pollMax   time.Duration
	longPoll  time.Duration
	clock     imagegen.Clock
	budget    *budget
	maxImage  int64  // bytes Download writes at most
	view      string // "full" WithFullView, "" for the default view

	onLimitWait func(time.Duration) // WithRateLimitWait
}

// credential is kept behind a pointer so that printing a Client's fields
// (fmt's %+v of *c, say) shows an address, never the key.
type credential struct{ authorization string }

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default: one with a timeout of
// DefaultTimeout that sends the API key on a redirect only within the
// API's origin, its scheme, host and port, where net/http sends it to
// any port of the host and to its subdomains, and refuses a redirect to
// plain http that would carry it). Its timeout must exceed the
// long-poll wait; its redirect policy is its own.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithUserAgent sets the User-Agent header (default DefaultUserAgent).
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithPollInterval sets Wait's interval between polls: first, doubling
// after each poll up to maxInterval (defaults 1s and 6s).
func WithPollInterval(first, maxInterval time.Duration) Option {
	return func(c *Client) { c.pollMin, c.pollMax = first, maxInterval }
}

// WithLongPoll sets the wait Wait asks the server for with "Prefer:
// wait=N" (default 25s, whole seconds); 0 sends no Prefer header.
func WithLongPoll(d time.Duration) Option { return func(c *Client) { c.longPoll = d } }

// WithRateLimitWait sets a function told, by the goroutine about to wait,
// each time the client holds a request back for d to keep within the
// key's rate limit (a program shows it, say, so a long wait does not look
// like a hang). It must not block.
func WithRateLimitWait(f func(d time.Duration)) Option {
	return func(c *Client) { c.onLimitWait = f }
}

// WithMaxDownload sets the largest image Download writes, in bytes
// (default DefaultMaxDownload; at least 1, else New fails); a larger one
// fails with ErrTooLarge.
func WithMaxDownload(n int64) Option { return func(c *Client) { c.maxImage = n } }

// WithFullView makes Task, Wait, Generate and List ask for the full view
// of tasks (?view=full, an optional extension): Task then carries
// CreatedAt, StartedAt, FinishedAt, Model, Seed and QueuePosition.
func WithFullView() Option { return func(c *Client) { c.view = "full" } }

// viewQuery is the view parameter the client sends after sep ("?" or
// "&"), or "" for the default view.
func (c *Client) viewQuery(sep string) string {
	if c.view == "" {
		return ""
	}
	return sep + "view=" + c.view
}

// WithClock sets the clock that Wait and the rate limit wait on (default
// imagegen.SystemClock). Tests pass a manual clock and need no sleeps.
func WithClock(clock imagegen.Clock) Option { return func(c *Client) { c.clock = clock } }

// New returns a Client of the API at baseURL, authenticated with apiKey.
//
// baseURL is the API's root with its version prefix, such as
// "https://img.example.com/api/v1"; a URL without a path gets "/api/v1".
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	base, err := parseBase(baseURL)
	if err != nil {
		return nil, err
	}
	if apiKey == "" {
		return nil, errors.New("client: API key is required")
	}
	for _, r := range apiKey {
		if r <= ' ' || r > '~' {
			return nil, errors.New("client: API key must be printable ASCII without spaces")
		}
	}
	c := &Client{
		base:      base,
		cred:      &credential{authorization: "Bearer " + apiKey},
		userAgent: DefaultUserAgent,
		pollMin:   DefaultPollInterval,
		pollMax:   DefaultMaxPollInterval,
		longPoll:  DefaultLongPoll,
		maxImage:  DefaultMaxDownload,
	}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = &http.Client{Timeout: DefaultTimeout, CheckRedirect: keepEncrypted}
	}
	if c.clock == nil {
		c.clock = imagegen.SystemClock{}
	}
	switch {
	case c.pollMin <= 0 || c.pollMax < c.pollMin:
		return nil, fmt.Errorf("client: poll interval must be positive and at most its maximum (got %v, %v)", c.pollMin, c.pollMax)
	case c.longPoll < 0:
		return nil, fmt.Errorf("client: long poll must not be negative (got %v)", c.longPoll)
	case c.maxImage < 1:
		// Below 1, Download of an image of unknown size wrote nothing
		// and reported success.
		return nil, fmt.Errorf("client: the download limit must be at least 1 byte (got %d)", c.maxImage)
	}
	c.budget = newBudget(c.clock)
	c.budget.onWait = c.onLimitWait
	return c, nil
}

func parseBase(raw string) (string, error) {
	if !strings.Contains(raw, "://") && !strings.ContainsAny(raw, "@ ") && raw != "" {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			raw = raw[:i] // a token may be there: not printed
		}
		return "", fmt.Errorf("client: base URL %q has no scheme: did you mean http://%s (or https://)?", raw, raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// Not the URL, which the parser quotes (its query may hold a
		// token), and its reason with user information hidden ("invalid
		// port" quotes part of a password with a "/" in it).
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return "", fmt.Errorf("client: base URL is not a valid URL: %w", urlredact.Error(err, raw, urlredact.Userinfo))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("client: base URL %q must be http or https", shownBase(u))
	case u.Host == "":
		return "", fmt.Errorf("client: base URL %q has no host", shownBase(u))
	case u.User != nil:
		return "", errors.New("client: base URL must not carry credentials; pass the API key")
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("client: base URL %q must not have a query or fragment (not shown)", shownBase(u))
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	if u.Path == "" {
		u.Path = "/api/v1"
	}
	return u.String(), nil
}

// shownBase is a refused base URL as its error quotes it: without its
// user information, query and fragment, where a token may be.
func shownBase(u *url.URL) string {
	bare := *u
	bare.User, bare.RawQuery, bare.ForceQuery, bare.Fragment, bare.RawFragment = nil, "", false, "", ""
	return bare.String()
}

// String describes c without its API key.
func (c *Client) String() string {
	return "client.Client{base: " + strconv.Quote(c.base) + ", key: [REDACTED]}"
}

// GoString describes c without its API key, for %#v.
func (c *Client) GoString() string { return c.String() }

// Submit submits a generation task (POST /generate). It waits first if
// the key has no request left in its window. Errors: *APIError, such as
// invalid_params (imagegen.ErrInvalidParams) or insufficient_credits
// (imagegen.ErrInsufficientCredits).
func (c *Client) Submit(ctx context.Context, req imagegen.Request) (wire.Submitted, error) {
	return c.submit(ctx, req, nil)
}

func (c *Client) submit(ctx context.Context, req imagegen.Request, header http.Header) (wire.Submitted, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return wire.Submitted{}, fmt.Errorf("client: submit: %w", err)
	}
	res, err := c.call(ctx, http.MethodPost, "/generate", body, header)
	if err != nil {
		return wire.Submitted{}, fmt.Errorf("client: submit: %w", err)
	}
	var sub wire.Submitted
	if err := json.Unmarshal(res.body, &sub); err != nil {
		return wire.Submitted{}, fmt.Errorf("client: submit: decoding the answer: %w", err)
	}
	if sub.TaskID == "" {
		return wire.Submitted{}, errors.New("client: submit: the answer has no task_id")
	}
	return sub, nil
}

// Task returns the task's current state (GET /tasks/{id}). It waits
// first if the key has no request left in its window. A task that does
// not exist or belongs to another user gives an error wrapping
// imagegen.ErrTaskNotFound.
func (c *Client) Task(ctx context.Context, id string) (*Task, error) {
	t, _, err := c.task(ctx, id, 0)
	return t, err
}

func (c *Client) task(ctx context.Context, id string, wait time.Duration) (*Task, bool, error) {
	if id == "" {
		return nil, false, fmt.Errorf("client: task: empty task id: %w", imagegen.ErrTaskNotFound)
	}
	var header http.Header
	if wait > 0 {
		header = http.Header{"Prefer": {"wait=" + strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10)}}
	}
	res, err := c.call(ctx, http.MethodGet, "/tasks/"+url.PathEscape(id)+c.viewQuery("?"), nil, header)
	if err != nil {
		return nil, false, fmt.Errorf("client: task %s: %w", id, err)
	}
	var t Task
	if err := json.Unmarshal(res.body, &t); err != nil {
		return nil, false, fmt.Errorf("client: task %s: decoding the answer: %w", id, err)
	}
	return &t, header != nil && longPollApplied(res.header), nil
}

// Wait polls the task until it ends (success or failed) and returns it;
// a failed task is not an error (see Task.Err). It polls at once, then
// with a growing interval, or at once again after a poll that the server
// held (long polling: it answered "Preference-Applied: wait=N").
// It waits out a 429 and retries up to 3 server or network errors in a
// row; any other error ends it, and so does ctx.
func (c *Client) Wait(ctx context.Context, id string) (*Task, error) {
	return c.wait(ctx, id, 0)
}

// Generate submits req and waits for the task to end: Submit, then Wait
// after one poll interval. A 429 on submit is waited out and retried (a
// refused submit charges nothing).
func (c *Client) Generate(ctx context.Context, req imagegen.Request) (*Task, error) {
	var sub wire.Submitted
	var err error
	for range maxSubmitTries {
		sub, err = c.Submit(ctx, req)
		if !isRateLimited(err) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return c.wait(ctx, sub.TaskID, c.pollMin)
}

func (c *Client) wait(ctx context.Context, id string, delay time.Duration) (*Task, error) {
	poll := retry.Doubling{Min: c.pollMin, Max: c.pollMax}
	failures := 0
	for {
		if err := sleep(ctx, c.clock, delay); err != nil {
			return nil, fmt.Errorf("client: wait for task %s: %w", id, err)
		}
		sent := c.clock.Now()
		t, longPolled, err := c.task(ctx, id, c.longPoll)
		switch {
		case err == nil:
			failures = 0
			switch t.Status {
			case imagegen.StatusSuccess, imagegen.StatusFailed:
				return t, nil
			case imagegen.StatusPending, imagegen.StatusProcessing:
			default:
				return nil, fmt.Errorf("client: task %s: unknown status %q", id, t.Status)
			}
			// After a long poll that the server held, poll again at once;
			// one that came back at once is no better than a short poll.
			if longPolled && c.clock.Now().Sub(sent) >= c.pollMin {
				delay = 0
				poll.Reset()
				continue
			}
			delay = poll.Next()
		case isRateLimited(err):
			delay = 0 // the budget holds the next request back for Retry-After
		case ctx.Err() == nil && IsTransient(err) && failures < maxTransient:
			failures++
			delay = poll.Next()
		default:
			return nil, err
		}
	}
}

func isRateLimited(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusTooManyRequests
}

// IsTransient reports whether an error of the client may pass by itself:
// a 5xx answer or a failure to get an answer at all (no connection, or
// an answer that broke off before its body was whole). Wait retries such
// errors; a program that polls on its own can do the same.
func IsTransient(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode >= 500
	}
	var netErr *url.Error
	var broken *brokenAnswerError
	return errors.As(err, &netErr) || errors.As(err, &broken)
}

// brokenAnswerError: an answer's body broke off before it was read
// whole (the connection closed or timed out after the headers): no
// answer, as a failed connection is, so IsTransient takes it.
type brokenAnswerError struct{ err error }

func (e *brokenAnswerError) Error() string { return "reading the answer: " + e.err.Error() }
func (e *brokenAnswerError) Unwrap() error { return e.err }

// Download writes the image at url (a URL of Task.Images) to w. Image
// URLs are signed and need no API key, so the key is not sent. An
// unknown or expired image gives an error wrapping
// imagegen.ErrImageNotFound; one larger than WithMaxDownload (64 MiB by
// default) an error wrapping ErrTooLarge, after w has had at most that
// many of its bytes.
func (c *Client) Download(ctx context.Context, imageURL string, w io.Writer) error {
	u, err := url.Parse(imageURL)
	if err != nil {
		return fmt.Errorf("client: download: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("client: download: %q is not an absolute http or https URL", u.Redacted())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("client: download: %w", err)
	}
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("client: download: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		apiErr := newAPIError(resp.StatusCode, resp.Header, body, c.clock.Now())
		if resp.StatusCode == http.StatusNotFound {
			apiErr.sentinel = imagegen.ErrImageNotFound
		}
		return fmt.Errorf("client: download: %w", apiErr)
	}
	if resp.ContentLength > c.maxImage {
		return fmt.Errorf("client: download: %w: %d bytes, more than %d", ErrTooLarge, resp.ContentLength, c.maxImage)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, c.maxImage))
	if err != nil {
		return fmt.Errorf("client: download: %w", err)
	}
	if n == c.maxImage {
		if _, err := io.ReadFull(resp.Body, make([]byte, 1)); err == nil {
			return fmt.Errorf("client: download: %w: more than %d bytes", ErrTooLarge, c.maxImage)
		}
	}
	return nil
}

// answer is a successful answer of the API.
type answer struct {
	header http.Header
	body   []byte
}

// call sends one API request, with header's fields added, within the
// key's budget and returns its answer, or an *APIError for an error
// status.
func (c *Client) call(ctx context.Context, method, path string, body []byte, header http.Header) (*answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", c.cred.authorization)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	} else {
		req.Body, req.ContentLength, req.GetBody = nil, 0, nil
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	t, err := c.budget.acquire(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.budget.release(t, 0, nil)
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	_ = resp.Body.Close()
	c.budget.release(t, resp.StatusCode, resp.Header)
	switch {
	case err != nil:
		return nil, &brokenAnswerError{err: err}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, newAPIError(resp.StatusCode, resp.Header, data, c.clock.Now())
	case len(data) > maxBody:
		return nil, fmt.Errorf("the answer is larger than %d bytes", maxBody)
	}
	return &answer{header: resp.Header, body: data}, nil
}
