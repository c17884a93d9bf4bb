package imagegen_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// A task that lease recovery fails (its workers kept dying) is counted
// and logged like a failure in a worker: finished failed/internal, its
// refund, and a log line with its id and submitting request's id.
func TestRecoveredFailureIsCountedAndLogged(t *testing.T) {
	is := is.New(t)
	rec := &recorder{}
	var logs bytes.Buffer
	f := newFixture(t, imagegentest.NewModel(2), logTo(&logs),
		func(c *imagegen.Config) { c.Observer = rec; c.MaxAttempts = 2 })
	_, err := f.svc.Grant(ctx, "u", 2, uuid.NewString())
	is.NoErr(err)
	sub, err := f.svc.Submit(imagegen.WithRequestID(ctx, "req-dying"), "u", textReq)
	is.NoErr(err)

	for attempt := 1; attempt <= 2; attempt++ { // two workers claim it and die
		_, err := f.store.ClaimTask(ctx, lease)
		is.NoErr(err)
		f.clock.Advance(lease)
		n, err := f.svc.Recover(ctx)
		is.NoErr(err)
		is.Equal(n, 1)
	}
	is.Equal(f.task(t, "u", sub.TaskID).ErrorCode, imagegen.CodeInternal)
	is.Equal(rec.list(), []string{
		"submitted text-to-image scripted 2",
		`finished scripted failed "internal"`,
		"refunded 2",
	})

	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		is.NoErr(json.Unmarshal([]byte(l), &m))
		if m["task_id"] == sub.TaskID && m["level"] == "WARN" {
			line = m
		}
	}
	is.True(line != nil) // the failure is logged with the task's id
	is.Equal(line["request_id"], "req-dying")
	is.Equal(line["model"], "scripted")
	is.Equal(line["attempts"], float64(2))
	is.Equal(line["refunded"], float64(2))

	// Recovering again finds nothing, and counts nothing twice.
	f.clock.Advance(lease)
	n, err := f.svc.Recover(ctx)
	is.NoErr(err)
	is.Equal(n, 0)
	is.Equal(len(rec.list()), 3)
}

// An operator's re-charge is counted as a charge; a free retry is not,
// and its later failure, having nothing to give back, counts no refund.
func TestOperatorRetryChargesAreCounted(t *testing.T) {
	is := is.New(t)
	rec := &recorder{}
	broken := &imagegen.ModelError{Provider: "scripted", Message: "no access"}
	model := imagegentest.NewModel(2, imagegentest.Fail(broken), imagegentest.Fail(broken), imagegentest.Fail(broken))
	f := newFixture(t, model, func(c *imagegen.Config) { c.Observer = rec })
	_, err := f.svc.Grant(ctx, "u", 2, uuid.NewString())
	is.NoErr(err)
	sub := f.submit(t, "u")
	_, err = f.svc.RunOnce(ctx)
	is.NoErr(err)

	in := f.svc.Inspector()
	is.NoErr(in.Retry(ctx, sub.TaskID, true, "provider key fixed"))
	_, err = f.svc.RunOnce(ctx)
	is.NoErr(err)
	is.NoErr(in.Retry(ctx, sub.TaskID, false, "one more, on the house"))
	_, err = f.svc.RunOnce(ctx)
	is.NoErr(err)
	is.Equal(f.balance(t, "u"), int64(2))

	is.Equal(rec.list(), []string{
		"submitted text-to-image scripted 2",
		"claimed scripted 0s",
		"provider scripted error",
		`finished scripted failed "provider_error"`,
		"refunded 2",
		"charged 2", // the re-charge
		"claimed scripted 0s",
		"provider scripted error",
		`finished scripted failed "provider_error"`,
		"refunded 2",
		"claimed scripted 0s", // the free retry: no charge
		"provider scripted error",
		`finished scripted failed "provider_error"`, // and no refund
	})
}

// Cancelling a task that an operator retried free of charge gives
// nothing back, and counts no refund.
func TestCancelAfterAFreeRetryCountsNoRefund(t *testing.T) {
	is := is.New(t)
	rec := &recorder{}
	broken := &imagegen.ModelError{Provider: "scripted", Message: "no access"}
	f := newFixture(t, imagegentest.NewModel(1, imagegentest.Fail(broken)), func(c *imagegen.Config) { c.Observer = rec })
	sub := f.submitFunded(t, "u")
	_, err := f.svc.RunOnce(ctx) // fails, refunded
	is.NoErr(err)
	is.NoErr(f.svc.Inspector().Retry(ctx, sub.TaskID, false, "on the house"))
	is.NoErr(f.svc.Cancel(ctx, "u", sub.TaskID))
	is.Equal(f.balance(t, "u"), int64(1)) // refunded once, by the failure
	got := rec.list()
	is.Equal(got[len(got)-1], `finished scripted failed "cancelled"`) // and no second "refunded"
}
