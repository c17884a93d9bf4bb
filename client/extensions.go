package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// The methods in this file use the server's optional extensions of
// the core API (docs/api.md). A server without them answers 404 (an *APIError with
// Code "not_found"), except SubmitWithKey, whose key such a server
// ignores.

// MaxIdempotencyKey is the longest idempotency key, in bytes.
const MaxIdempotencyKey = imagegen.MaxIdempotencyKey

// SubmitWithKey is Submit with an idempotency key (the Idempotency-Key
// header): after a network error, a timeout or a 5xx answer, submitting
// again with the same key and the same request cannot create or charge a
// second task, since the server answers with the first request's answer
// (for 24 hours). Use a new key, such as a random UUID, for every task you
// mean to create, and keep it until a submit with it got an answer.
//
// The key is 1 to MaxIdempotencyKey printable ASCII characters, not
// starting or ending with a space (else an error wrapping
// imagegen.ErrInvalidParams, and nothing is sent). Errors besides
// Submit's: the key used with another request gives invalid_params
// (imagegen.ErrInvalidParams); while the first request with the key is
// still being handled, an error wrapping ErrIdempotencyKeyInUse. Only a
// created task is kept for the key: a refusal of the request
// (invalid_params) or for want of credits is not, so the same key may
// be sent again with the request corrected, or after adding credits.
func (c *Client) SubmitWithKey(ctx context.Context, req imagegen.Request, idempotencyKey string) (wire.Submitted, error) {
	if !imagegen.ValidIdempotencyKey(idempotencyKey) {
		return wire.Submitted{}, fmt.Errorf("client: submit: the idempotency key must be 1 to %d printable ASCII characters, not starting or ending with a space: %w",
			MaxIdempotencyKey, imagegen.ErrInvalidParams)
	}
	return c.submit(ctx, req, http.Header{"Idempotency-Key": {idempotencyKey}})
}

// Cancel cancels a pending or processing task (POST /tasks/{id}/cancel)
// and returns it as it now is: failed, with ErrorCode
// imagegen.CodeCancelled. A pending task's credits are refunded; a
// processing one keeps its charge (its generation had begun). A task that has
// already ended is not changed, and the error wraps
// imagegen.ErrInvalidTransition (409 task_already_finished); Task tells
// how it ended. A task that does not exist or belongs to another user
// gives an error wrapping imagegen.ErrTaskNotFound.
func (c *Client) Cancel(ctx context.Context, id string) (*Task, error) {
	if id == "" {
		return nil, fmt.Errorf("client: cancel: empty task id: %w", imagegen.ErrTaskNotFound)
	}
	res, err := c.call(ctx, http.MethodPost, "/tasks/"+url.PathEscape(id)+"/cancel", nil, nil)
	if err != nil {
		return nil, fmt.Errorf("client: cancel %s: %w", id, err)
	}
	var t Task
	if err := json.Unmarshal(res.body, &t); err != nil {
		return nil, fmt.Errorf("client: cancel %s: decoding the answer: %w", id, err)
	}
	return &t, nil
}

// ListOptions selects the tasks of a List page.
type ListOptions struct {
	Status imagegen.Status // only tasks with this status; "" for all
	Limit  int             // at most this many tasks (1 to 100); 0 for the server's default, 20
	Cursor string          // the previous page's NextCursor; "" for the first page
}

// TaskList is one page of List.
type TaskList struct {
	Tasks []Task `json:"tasks"` // newest first
	// NextCursor, when not "", is the Cursor of the next page. A page
	// may hold fewer than Limit tasks, even none, and still have one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// List returns a page of the caller's own tasks that have not expired,
// newest first (GET /tasks). For every page, pass each NextCursor back
// until it is "":
//
//	opts := client.ListOptions{Status: imagegen.StatusPending}
//	for {
//		page, err := c.List(ctx, opts)
//		if err != nil { … }
//		// use page.Tasks
//		if page.NextCursor == "" { break }
//		opts.Cursor = page.NextCursor
//	}
//
// Each page is one request against the rate limit. A bad status, limit
// or cursor gives an error wrapping imagegen.ErrInvalidParams. Cursors
// are opaque and serve only the user and list they were given for; one
// kept across a server upgrade may be refused so: start again without
// it.
func (c *Client) List(ctx context.Context, opts ListOptions) (TaskList, error) {
	q := pageQuery(opts.Limit, opts.Cursor)
	if opts.Status != "" {
		q.Set("status", string(opts.Status))
	}
	if c.view != "" {
		q.Set("view", c.view)
	}
	var list TaskList
	if err := c.getJSON(ctx, "list tasks", "/tasks", q, &list); err != nil {
		return TaskList{}, err
	}
	if list.Tasks == nil {
		return TaskList{}, errors.New("client: list tasks: the answer has no tasks")
	}
	return list, nil
}

// Credits returns the caller's credit balance (GET /credits), which API
// use and web use share.
func (c *Client) Credits(ctx context.Context) (int64, error) {
	res, err := c.call(ctx, http.MethodGet, "/credits", nil, nil)
	if err != nil {
		return 0, fmt.Errorf("client: credits: %w", err)
	}
	var body struct {
		CreditsRemaining *int64 `json:"credits_remaining"`
	}
	if err := json.Unmarshal(res.body, &body); err != nil {
		return 0, fmt.Errorf("client: credits: decoding the answer: %w", err)
	}
	if body.CreditsRemaining == nil {
		return 0, errors.New("client: credits: the answer has no credits_remaining")
	}
	return *body.CreditsRemaining, nil
}

// pageQuery is the query of one page of a paged read: its limit (0 for
// the server's default) and cursor ("" for the first page).
func pageQuery(limit int, cursor string) url.Values {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}

// getJSON GETs path with the query q and decodes the answer into v; what
// names the call in errors.
func (c *Client) getJSON(ctx context.Context, what, path string, q url.Values, v any) error {
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	res, err := c.call(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return fmt.Errorf("client: %s: %w", what, err)
	}
	if err := json.Unmarshal(res.body, v); err != nil {
		return fmt.Errorf("client: %s: decoding the answer: %w", what, err)
	}
	return nil
}
