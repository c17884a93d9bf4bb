package storetest

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

func testWebhooks(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 3)
	withHook := func() *imagegen.Task {
		task := newTask("u", 1)
		task.Request.CallbackURL = "https://app.example.com/hooks?task=1"
		return create(t, s, task)
	}
	ok1 := withHook()
	plain := submit(t, s, "u", 1)
	cancelled := withHook()

	got := claimHooks(t, s, 10)
	is.Equal(len(got), 0) // nothing has finished

	c := claim(t, s)
	is.NoErr(s.CompleteTask(ctx, c.ID, c.Attempt, nil, nil))
	c = claim(t, s)
	is.NoErr(s.CompleteTask(ctx, c.ID, c.Attempt, nil, nil)) // no callback: nothing queued
	is.NoErr(errOf(s.CancelTask(ctx, "u", cancelled.ID)))
	_ = plain

	got = claimHooks(t, s, 10)
	is.Equal(len(got), 2)
	ids := map[string]imagegen.WebhookDelivery{}
	for _, d := range got {
		ids[d.TaskID] = d
	}
	is.Equal(ids[ok1.ID], imagegen.WebhookDelivery{ID: ok1.ID, TaskID: ok1.ID, Event: imagegen.EventCompleted, Owner: "u", URL: "https://app.example.com/hooks?task=1", Attempts: 0})
	_, has := ids[cancelled.ID]
	is.True(has)

	// Leased: not handed out again until the lease ends.
	got = claimHooks(t, s, 10)
	is.Equal(len(got), 0)
	h.Advance(lease)
	got = claimHooks(t, s, 1)
	is.Equal(len(got), 1)

	// A failed attempt counts and waits for its delay; an ack ends it.
	is.NoErr(s.RetryWebhook(ctx, ok1.ID, time.Minute))
	is.NoErr(s.AckWebhook(ctx, cancelled.ID))
	h.Advance(lease)
	got = dueAfter(t, h, time.Minute)
	is.Equal(len(got), 1)
	is.Equal(got[0].TaskID, ok1.ID)
	is.Equal(got[0].Attempts, 1)

	// A postponed delivery waits for its delay (not the lease) and counts
	// no attempt; an unknown ID is no error.
	is.NoErr(s.PostponeWebhook(ctx, ok1.ID, time.Second))
	got = dueAfter(t, h, time.Second)
	is.Equal(len(got), 1)
	is.Equal(got[0].ID, ok1.ID)
	is.Equal(got[0].Attempts, 1)
	is.NoErr(s.PostponeWebhook(ctx, ok1.ID, 0)) // due at once
	got = claimHooks(t, s, 10)
	is.Equal(len(got), 1)
	is.Equal(got[0].Attempts, 1)
	is.NoErr(s.PostponeWebhook(ctx, storekit.WebhookID("no-such-task", imagegen.EventCompleted), 0))
	is.NoErr(s.AckWebhook(ctx, ok1.ID))
	h.Advance(time.Hour)
	got = claimHooks(t, s, 10)
	is.Equal(len(got), 0)
}

// testWebhookDueOrder: deliveries are claimed in due-time order, not in
// the order they were queued: a retried delivery goes behind one that
// became due before it.
func testWebhookDueOrder(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 2)
	finished := func(url string) string {
		task := newTask("u", 1)
		task.Request.CallbackURL = url
		create(t, s, task)
		c := claim(t, s)
		is.NoErr(s.CompleteTask(ctx, c.ID, c.Attempt, nil, nil))
		return task.ID
	}
	first := finished("https://slow.example.com/hook")
	got := claimHooks(t, s, 1)
	is.Equal(len(got), 1)
	is.Equal(got[0].TaskID, first)
	is.NoErr(s.RetryWebhook(ctx, first, time.Minute)) // due again in a minute
	h.Advance(time.Second)
	second := finished("https://fast.example.com/hook") // due now
	h.Advance(2 * time.Minute)                          // both due; second since earlier
	got = claimHooks(t, s, 1)
	is.Equal(len(got), 1)
	is.Equal(got[0].TaskID, second)
	got = claimHooks(t, s, 1)
	is.Equal(len(got), 1)
	is.Equal(got[0].TaskID, first)
}

// testWebhookEvents: callback_events choose the deliveries: processing
// on the first claim only, completed when the task ends; each is leased,
// retried and acknowledged on its own.
func testWebhookEvents(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 3)
	with := func(events ...imagegen.CallbackEvent) *imagegen.Task {
		task := newTask("u", 1)
		task.Request.CallbackURL = "https://app.example.com/hooks"
		task.Request.CallbackEvents = events
		create(t, s, task)
		h.Advance(time.Millisecond)
		return task
	}
	both := with(imagegen.EventProcessing, imagegen.EventCompleted)
	startOnly := with(imagegen.EventProcessing)
	endOnly := with(imagegen.EventCompleted)
	claimed := func() map[string]imagegen.WebhookDelivery {
		t.Helper()
		got := claimHooks(t, s, 10)
		m := map[string]imagegen.WebhookDelivery{}
		for _, d := range got {
			is.Equal(d.ID, storekit.WebhookID(d.TaskID, d.Event))
			m[d.ID] = d
		}
		return m
	}

	// The first claims: processing deliveries for the two that ask.
	a, b, c := claim(t, s), claim(t, s), claim(t, s)
	got := claimed()
	is.Equal(len(got), 2)
	is.Equal(got[storekit.WebhookID(both.ID, imagegen.EventProcessing)].Event, imagegen.EventProcessing)
	is.Equal(got[storekit.WebhookID(startOnly.ID, imagegen.EventProcessing)].TaskID, startOnly.ID)
	is.NoErr(s.RetryWebhook(ctx, storekit.WebhookID(both.ID, imagegen.EventProcessing), time.Minute))
	is.NoErr(s.AckWebhook(ctx, storekit.WebhookID(startOnly.ID, imagegen.EventProcessing)))

	// A retried task is not "processing" again.
	is.NoErr(s.RetryTask(ctx, c.ID, c.Attempt, 0, "busy"))
	again := claim(t, s)
	is.Equal(again.ID, c.ID)

	// They end: completed deliveries for both and endOnly; both's
	// processing delivery keeps its own attempts and due time.
	is.NoErr(s.CompleteTask(ctx, a.ID, a.Attempt, nil, nil))
	is.NoErr(s.CompleteTask(ctx, b.ID, b.Attempt, nil, nil))
	is.NoErr(errOf(s.FailTask(ctx, again.ID, again.Attempt, fail("no"))))
	h.Advance(lease)
	got = claimed()
	is.Equal(len(got), 2)
	is.Equal(got[both.ID].Event, imagegen.EventCompleted)
	is.Equal(got[endOnly.ID].Event, imagegen.EventCompleted)
	h.Advance(time.Minute)
	got = claimed()
	is.Equal(len(got), 3) // both's processing retry, and the two completed (their lease ended)
	p := got[storekit.WebhookID(both.ID, imagegen.EventProcessing)]
	is.Equal(p.Attempts, 1)
	is.Equal(got[both.ID].Attempts, 0)
	for id := range got {
		is.NoErr(s.AckWebhook(ctx, id))
	}
	h.Advance(time.Hour)
	is.Equal(len(claimed()), 0)
}
