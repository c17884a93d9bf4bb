package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
)

func TestCancel(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		ctx := context.Background()
		c := e.client()
		sub, err := c.Submit(ctx, fox)
		is.NoErr(err)

		_, err = e.clientFor(e.base, e.user("mallory", 0)).Cancel(ctx, sub.TaskID)
		is.True(errors.Is(err, imagegen.ErrTaskNotFound)) // another user's task

		task, err := c.Cancel(ctx, sub.TaskID)
		is.NoErr(err)
		is.Equal(*task, client.Task{TaskID: sub.TaskID, Status: imagegen.StatusFailed, Error: imagegen.CancelledMessage, ErrorCode: imagegen.CodeCancelled})
		is.True(errors.Is(task.Err(), client.ErrTaskFailed))
		is.True(strings.HasSuffix(task.Err().Error(), "(cancelled)"))
		balance, err := c.Credits(ctx)
		is.NoErr(err)
		is.Equal(balance, int64(10)) // refunded

		_, err = c.Cancel(ctx, sub.TaskID)
		is.True(errors.Is(err, imagegen.ErrInvalidTransition)) // it has ended
		var apiErr *client.APIError
		is.True(errors.As(err, &apiErr))
		is.Equal(apiErr.StatusCode, http.StatusConflict)
		is.Equal(apiErr.Code, "task_already_finished")
		polled, err := c.Task(ctx, sub.TaskID)
		is.NoErr(err)
		is.Equal(polled, task) // unchanged

		n := len(e.log())
		_, err = c.Cancel(ctx, "")
		is.True(errors.Is(err, imagegen.ErrTaskNotFound))
		log := e.log()
		is.Equal(len(log), n) // nothing was sent
		cancels := only(log, func(a arrival) bool { return a.method == http.MethodPost && strings.HasSuffix(a.path, "/cancel") })
		is.Equal(len(cancels), 3)
		is.Equal(cancels[1].path, "/api/v1/tasks/"+sub.TaskID+"/cancel")
		is.Equal(cancels[1].header.Get("Authorization"), "Bearer "+e.key)
		is.Equal(cancels[1].header.Get("Content-Type"), "") // no body
	})
}

// firstCancelled submits fox n times with c and cancels the first
// (oldest) task; it returns the ids, oldest first.
func firstCancelled(t *testing.T, c *client.Client, n int) []string {
	t.Helper()
	ids := submitEach(t, c, fox, n)
	_, err := c.Cancel(context.Background(), ids[0])
	is.New(t).NoErr(err)
	return ids
}

func TestList(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		ctx := context.Background()
		c := e.client()
		ids := firstCancelled(t, c, 3)

		page, err := c.List(ctx, client.ListOptions{Limit: 2})
		is.NoErr(err)
		is.Equal(page.Tasks, []client.Task{{TaskID: ids[2], Status: imagegen.StatusPending}, {TaskID: ids[1], Status: imagegen.StatusPending}})
		is.True(page.NextCursor != "")
		next, err := c.List(ctx, client.ListOptions{Limit: 2, Cursor: page.NextCursor})
		is.NoErr(err)
		is.Equal(next, client.TaskList{Tasks: []client.Task{
			{TaskID: ids[0], Status: imagegen.StatusFailed, Error: imagegen.CancelledMessage, ErrorCode: imagegen.CodeCancelled},
		}}) // the last page: no NextCursor

		pending, err := c.List(ctx, client.ListOptions{Status: imagegen.StatusPending})
		is.NoErr(err)
		is.Equal(len(pending.Tasks), 2)
		none, err := e.clientFor(e.base, e.user("bob", 0)).List(ctx, client.ListOptions{})
		is.NoErr(err)
		is.Equal(none, client.TaskList{Tasks: []client.Task{}}) // another user's list is their own

		for _, opts := range []client.ListOptions{{Status: "done"}, {Limit: 101}, {Limit: -1}, {Cursor: "bogus"}} {
			_, err := c.List(ctx, opts)
			is.True(errors.Is(err, imagegen.ErrInvalidParams))
		}

		var queries []string
		for _, a := range only(e.log(), func(a arrival) bool { return a.method == http.MethodGet && a.path == "/api/v1/tasks" }) {
			queries = append(queries, a.query)
		}
		is.Equal(queries[:4], []string{"limit=2", "cursor=" + page.NextCursor + "&limit=2", "status=pending", ""})
	})
}

func TestCredits(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		ctx := context.Background()
		c := e.client()
		balance, err := c.Credits(ctx)
		is.NoErr(err)
		is.Equal(balance, int64(10))
		sub, err := c.Submit(ctx, fox)
		is.NoErr(err)
		balance, err = c.Credits(ctx)
		is.NoErr(err)
		is.Equal(balance, sub.CreditsRemaining)
		is.Equal(balance, int64(8))
		_, err = e.clientFor(e.base, imagegen.NewAPIKey()).Credits(ctx)
		is.True(errors.Is(err, imagegen.ErrUnauthorized))
	})
}

// fingerprint is how the server identifies a request body for its
// idempotency key: the SHA-256 of the body the client sends.
func fingerprint(t *testing.T, req imagegen.Request) string {
	body, err := json.Marshal(req)
	is.New(t).NoErr(err)
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

func TestSubmitWithKey(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		ctx := context.Background()
		c := e.client()

		first, err := c.SubmitWithKey(ctx, fox, "order-1")
		is.NoErr(err)
		again, err := c.SubmitWithKey(ctx, fox, "order-1") // a retry, say after a timeout
		is.NoErr(err)
		is.Equal(again, first) // the first answer: the same task
		balance, err := c.Credits(ctx)
		is.NoErr(err)
		is.Equal(balance, int64(8)) // charged once

		other := imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "another fox"}
		_, err = c.SubmitWithKey(ctx, other, "order-1")
		is.True(errors.Is(err, imagegen.ErrInvalidParams)) // the key was used with another request

		// The first request with a key is still being handled.
		rec, err := e.stack.Store.BeginIdempotent(ctx, "alice", "order-2", fingerprint(t, fox), "", time.Minute, time.Hour)
		is.NoErr(err)
		is.True(rec == nil)
		_, err = c.SubmitWithKey(ctx, fox, "order-2")
		is.True(errors.Is(err, client.ErrIdempotencyKeyInUse))
		is.True(!errors.Is(err, imagegen.ErrInvalidParams))
		var apiErr *client.APIError
		is.True(errors.As(err, &apiErr))
		is.Equal(apiErr.StatusCode, http.StatusConflict)
		is.Equal(apiErr.Code, "idempotency_key_in_use")

		// A refusal of the body is not kept for its key: sent again it
		// is refused again, not replayed.
		blank := fox
		blank.Prompt = "   "
		_, err = c.SubmitWithKey(ctx, blank, "blank")
		is.True(errors.As(err, &apiErr))
		is.Equal(apiErr.Code, "invalid_params")
		is.True(!apiErr.Replayed)
		_, err = c.SubmitWithKey(ctx, blank, "blank")
		is.True(errors.Is(err, imagegen.ErrInvalidParams))
		is.True(errors.As(err, &apiErr))
		is.True(!apiErr.Replayed)
		is.True(!strings.Contains(err.Error(), "replayed"))

		// A refusal that depends on the balance is not kept: after a
		// top-up the same key goes through.
		poor := e.clientFor(e.base, e.user("carol", 1))
		_, err = poor.SubmitWithKey(ctx, fox, "k")
		is.True(errors.As(err, &apiErr))
		is.Equal(apiErr.Code, "insufficient_credits")
		_, err = e.svc.Grant(ctx, "carol", 5, uuid.NewString())
		is.NoErr(err)
		topped, err := poor.SubmitWithKey(ctx, fox, "k")
		is.NoErr(err)
		replayed, err := poor.SubmitWithKey(ctx, fox, "k") // now the success is replayed
		is.NoErr(err)
		is.Equal(replayed, topped)

		// Keys the server would refuse, or see otherwise, are not sent.
		n := len(e.log())
		for _, key := range []string{"", strings.Repeat("k", 256), "café", "tab\there", " padded", "padded "} {
			_, err := c.SubmitWithKey(ctx, fox, key)
			is.True(errors.Is(err, imagegen.ErrInvalidParams))
		}
		_, err = c.SubmitWithKey(ctx, fox, strings.Repeat("k", 255))
		is.NoErr(err)
		log := e.log()
		is.Equal(len(log), n+1)

		var keys []string
		for _, a := range only(log, func(a arrival) bool { return a.method == http.MethodPost && a.path == "/api/v1/generate" }) {
			keys = append(keys, a.header.Get("Idempotency-Key"))
		}
		is.Equal(keys[:5], []string{"order-1", "order-1", "order-1", "order-2", "blank"})
		_, err = c.Submit(ctx, fox)
		is.NoErr(err)
		log = e.log()
		is.Equal(log[len(log)-1].header.Values("Idempotency-Key"), []string(nil)) // Submit sends none
	})
}

func TestFullView(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		ctx := context.Background()
		e.model.TakesSeeds()
		full := e.client(client.WithFullView())
		basic := e.client()
		seed := int64(7)
		ids := submitEach(t, full, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a fox", Seed: &seed}, 3)
		task, err := full.Task(ctx, ids[2])
		is.NoErr(err)
		is.Equal(*task.QueuePosition, 2) // behind the other two
		is.Equal(task.Model, "scripted")
		is.Equal(*task.Seed, seed)
		is.True(task.CreatedAt != nil && task.StartedAt == nil)
		plain, err := basic.Task(ctx, ids[2])
		is.NoErr(err)
		is.Equal(*plain, client.Task{TaskID: ids[2], Status: imagegen.StatusPending}) // the default view

		e.finishAfter(3 * time.Second)
		done, err := full.Wait(ctx, ids[2])
		is.NoErr(err)
		is.Equal(done.Status, imagegen.StatusSuccess)
		is.True(done.StartedAt != nil && done.FinishedAt != nil)
		is.True(done.StartedAt.Sub(*done.CreatedAt) >= 3*time.Second) // it waited in the queue
		is.True(done.QueuePosition == nil)

		list, err := full.List(ctx, client.ListOptions{})
		is.NoErr(err)
		is.Equal(len(list.Tasks), 3)
		for _, task := range list.Tasks {
			is.Equal(task.Model, "scripted")
			is.True(task.FinishedAt != nil)
		}
		for _, a := range e.log() {
			if a.method == "GET" && a.query != "" && a.query != "view=full" {
				t.Errorf("GET %s?%s: the full view's query is view=full", a.path, a.query)
			}
		}
	})
}

func TestLedger(t *testing.T) {
	inBubble(t, func(t *testing.T, e *env) {
		is := is.New(t)
		ctx := context.Background()
		c := e.client()
		ids := firstCancelled(t, c, 2)

		var all []client.LedgerEntry
		opts := client.LedgerOptions{Limit: 3}
		for {
			page, err := c.Ledger(ctx, opts)
			is.NoErr(err)
			all = append(all, page.Entries...)
			if page.NextCursor == "" {
				break
			}
			opts.Cursor = page.NextCursor
		}
		is.Equal(len(all), 4) // grant, two charges, a refund
		is.Equal(all[0].Kind, imagegen.LedgerRefund)
		is.Equal(all[0].Reference, ids[0])
		is.Equal(all[3].Kind, imagegen.LedgerGrant)
		balance, err := c.Credits(ctx)
		is.NoErr(err)
		is.Equal(all[0].BalanceAfter, balance)
		var sum int64
		for _, x := range all {
			sum += x.Amount
		}
		is.Equal(sum, balance)

		_, err = c.Ledger(ctx, client.LedgerOptions{Cursor: "nonsense"})
		is.True(errors.Is(err, imagegen.ErrInvalidParams))
	})
}
