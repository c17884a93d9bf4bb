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
	is.NoErr(errOf(s.CancelTask(ctx, "u", cancelled.ID, imagegen.CancelParams{})))
	_ = plain

	got = claimHooks(t, s, 10)
	is.Equal(len(got), 2)
	ids := map[string]imagegen.WebhookDelivery{}
	for _, d := range got {
		ids[d.TaskID] = d
	}
	// The delivery's ID is its WebhookID, or one naming this claim of it
	// (storekit.ClaimedWebhookID).
	hookID, _, _ := storekit.ParseClaimedWebhookID(ids[ok1.ID].ID)
	is.Equal(hookID, storekit.WebhookID(ok1.ID, imagegen.EventCompleted))
	d := ids[ok1.ID]
	d.ID = hookID
	is.Equal(d, imagegen.WebhookDelivery{ID: ok1.ID, TaskID: ok1.ID, Event: imagegen.EventCompleted, Owner: "u", URL: "https://app.example.com/hooks?task=1", Attempts: 0})
	_, has := ids[cancelled.ID]
	is.True(has)

	// Leased: not handed out again until the lease ends.
	got = claimHooks(t, s, 10)
	is.Equal(len(got), 0)
	h.Advance(lease)
	got = claimHooks(t, s, 1)
	is.Equal(len(got), 1)
	ids[got[0].TaskID] = got[0] // the other's lease ran out, not claimed again

	// A failed attempt counts and waits for its delay; an ack ends it.
	is.NoErr(s.RetryWebhook(ctx, ids[ok1.ID].ID, time.Minute))
	is.NoErr(s.AckWebhook(ctx, ids[cancelled.ID].ID))
	h.Advance(lease)
	got = dueAfter(t, h, time.Minute)
	is.Equal(len(got), 1)
	is.Equal(got[0].TaskID, ok1.ID)
	is.Equal(got[0].Attempts, 1)

	// A postponed delivery waits for its delay (not the lease) and counts
	// no attempt; an unknown ID is no error.
	is.NoErr(s.PostponeWebhook(ctx, got[0].ID, time.Second))
	got = dueAfter(t, h, time.Second)
	is.Equal(len(got), 1)
	is.Equal(got[0].TaskID, ok1.ID)
	is.Equal(got[0].Attempts, 1)
	is.NoErr(s.PostponeWebhook(ctx, got[0].ID, 0)) // due at once
	got = claimHooks(t, s, 10)
	is.Equal(len(got), 1)
	is.Equal(got[0].Attempts, 1)
	is.NoErr(s.PostponeWebhook(ctx, storekit.WebhookID("no-such-task", imagegen.EventCompleted), 0))
	is.NoErr(s.PostponeWebhook(ctx, storekit.ClaimedWebhookID(storekit.WebhookID("no-such-task", imagegen.EventCompleted), 1), 0))
	is.NoErr(s.AckWebhook(ctx, got[0].ID))
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
	is.NoErr(s.RetryWebhook(ctx, got[0].ID, time.Minute)) // due again in a minute
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
			id, _, _ := storekit.ParseClaimedWebhookID(d.ID) // its WebhookID, or one naming the claim
			is.Equal(id, storekit.WebhookID(d.TaskID, d.Event))
			m[id] = d
		}
		return m
	}

	// The first claims: processing deliveries for the two that ask.
	a, b, c := claim(t, s), claim(t, s), claim(t, s)
	got := claimed()
	is.Equal(len(got), 2)
	is.Equal(got[storekit.WebhookID(both.ID, imagegen.EventProcessing)].Event, imagegen.EventProcessing)
	is.Equal(got[storekit.WebhookID(startOnly.ID, imagegen.EventProcessing)].TaskID, startOnly.ID)
	is.NoErr(s.RetryWebhook(ctx, got[storekit.WebhookID(both.ID, imagegen.EventProcessing)].ID, time.Minute))
	is.NoErr(s.AckWebhook(ctx, got[storekit.WebhookID(startOnly.ID, imagegen.EventProcessing)].ID))

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
	for _, d := range got {
		is.NoErr(s.AckWebhook(ctx, d.ID))
	}
	h.Advance(time.Hour)
	is.Equal(len(claimed()), 0)
}

// hookedTask submits a task with a callback (completed only), claims it
// and fails it: its completed delivery is queued, due now.
func hookedTask(t *testing.T, s imagegen.Store) *imagegen.Task {
	t.Helper()
	task := newTask("u", 1)
	task.Request.CallbackURL = "https://app.example.com/hooks"
	create(t, s, task)
	failAgain(t, s, task.ID)
	return task
}

// failAgain claims the task (pending, the only one ready) and fails it.
func failAgain(t *testing.T, s imagegen.Store, id string) {
	t.Helper()
	c := claim(t, s)
	if c.ID != id {
		t.Fatalf("claimed %s, want %s", c.ID, id)
	}
	if _, err := s.FailTask(ctx, c.ID, c.Attempt, fail("no")); err != nil {
		t.Fatalf("fail %s: %v", id, err)
	}
}

// oneHook claims the due deliveries and checks that they are task id's
// completed one alone, with the given attempts.
func oneHook(t *testing.T, s imagegen.Store, id string, attempts int) imagegen.WebhookDelivery {
	t.Helper()
	got := claimHooks(t, s, 10)
	if len(got) != 1 || got[0].TaskID != id || got[0].Event != imagegen.EventCompleted || got[0].Attempts != attempts {
		t.Fatalf("claimed %+v; want task %s's completed delivery alone, %d attempts made", got, id, attempts)
	}
	return got[0]
}

// testWebhookStaleClaim: a delivery is handed out under an ID naming
// its claim; the outcome of a stale claim (an attempt still in flight
// when the task, requeued by an operator, ended again and queued a new
// delivery under the same WebhookID; or one whose lease ran out and
// another dispatcher claimed it) changes nothing. A plain WebhookID acts
// whatever the delivery's state. A store that hands out plain IDs fails
// this case: an old attempt's ack would remove the new delivery.
func testWebhookStaleClaim(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 1)
	task := hookedTask(t, s)
	hookID := storekit.WebhookID(task.ID, imagegen.EventCompleted)
	old := oneHook(t, s, task.ID, 0)
	id, _, claimed := storekit.ParseClaimedWebhookID(old.ID)
	is.Equal(id, hookID)

	// While its callback is in flight, the task is requeued and ends
	// again: a new delivery is queued, due now.
	h.Advance(time.Second)
	is.NoErr(s.RequeueTask(ctx, task.ID, false))
	failAgain(t, s, task.ID)

	// The old attempt's outcome, whatever it is, leaves it alone.
	is.NoErr(s.RetryWebhook(ctx, old.ID, time.Minute))
	is.NoErr(s.PostponeWebhook(ctx, old.ID, time.Hour))
	is.NoErr(s.AckWebhook(ctx, old.ID))
	cur := oneHook(t, s, task.ID, 0) // still due, no attempt counted
	is.True(claimed)                 // the ID names the claim
	is.True(cur.ID != old.ID)

	// Nor while the new one is leased; its own claim acks it.
	is.NoErr(s.AckWebhook(ctx, old.ID))
	is.NoErr(s.RetryWebhook(ctx, old.ID, 0))
	h.Advance(lease)
	again := oneHook(t, s, task.ID, 0) // its lease ran out: claimed again
	is.True(again.ID != cur.ID)
	is.NoErr(s.RetryWebhook(ctx, cur.ID, 0)) // the first claim of it is stale now
	is.NoErr(s.PostponeWebhook(ctx, cur.ID, 0))
	is.NoErr(s.AckWebhook(ctx, cur.ID))
	is.Equal(len(claimHooks(t, s, 10)), 0) // still leased by the second claim
	is.NoErr(s.RetryWebhook(ctx, again.ID, time.Minute))
	h.Advance(time.Minute)
	again = oneHook(t, s, task.ID, 1)
	is.NoErr(s.AckWebhook(ctx, again.ID))
	h.Advance(2 * lease)
	is.Equal(len(claimHooks(t, s, 10)), 0)

	// A plain WebhookID acks the delivery however it stands: queued, or
	// leased by a claim.
	is.NoErr(s.RequeueTask(ctx, task.ID, false))
	failAgain(t, s, task.ID)
	is.NoErr(s.AckWebhook(ctx, hookID))
	is.Equal(len(claimHooks(t, s, 10)), 0)
	is.NoErr(s.RequeueTask(ctx, task.ID, false))
	failAgain(t, s, task.ID)
	oneHook(t, s, task.ID, 0)
	is.NoErr(s.AckWebhook(ctx, hookID))
	h.Advance(2 * lease)
	is.Equal(len(claimHooks(t, s, 10)), 0)
}

// testWebhookOfARequeuedTask: requeuing a failed task drops its queued
// deliveries, so its next ending queues one due then with no attempts
// counted, whatever became of the old one (here retried, due later).
func testWebhookOfARequeuedTask(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	grant(t, s, "u", 1)
	task := newTask("u", 1)
	task.Request.CallbackURL = "https://app.example.com/hooks"
	task.Request.CallbackEvents = []imagegen.CallbackEvent{imagegen.EventProcessing, imagegen.EventCompleted}
	create(t, s, task)
	failAgain(t, s, task.ID)
	got := claimHooks(t, s, 10)
	is.Equal(len(got), 2) // processing and completed
	for _, d := range got {
		is.NoErr(s.RetryWebhook(ctx, d.ID, time.Hour))
	}

	h.Advance(time.Second)
	is.NoErr(s.RequeueTask(ctx, task.ID, false))
	is.Equal(len(claimHooks(t, s, 10)), 0) // nothing queued: it has not ended
	h.Advance(time.Hour)
	is.Equal(len(claimHooks(t, s, 10)), 0) // the retried ones are gone
	failAgain(t, s, task.ID)
	oneHook(t, s, task.ID, 0) // due at once, no attempt counted
}
