package client_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
)

func TestFullView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		ctx := context.Background()
		e := newEnv(t)
		e.model.TakesSeeds()
		full := e.client(client.WithFullView())
		basic := e.client()
		seed := int64(7)
		var ids []string
		for range 3 {
			sub, err := full.Submit(ctx, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a fox", Seed: &seed})
			is.NoErr(err)
			ids = append(ids, sub.TaskID)
		}
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
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		ctx := context.Background()
		e := newEnv(t)
		c := e.client()
		var ids []string
		for range 2 {
			sub, err := c.Submit(ctx, fox)
			is.NoErr(err)
			ids = append(ids, sub.TaskID)
		}
		_, err := c.Cancel(ctx, ids[0])
		is.NoErr(err)

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
