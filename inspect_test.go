package imagegen_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

func TestInspectorRetriesAFailedTask(t *testing.T) {
	is := is.New(t)
	var logs bytes.Buffer
	broken := &imagegen.ModelError{Provider: "scripted", Message: "no access"}
	f := newFixture(t, imagegentest.NewModel(2, imagegentest.Fail(broken), imagegentest.Fail(broken)), logTo(&logs))
	_, err := f.svc.Grant(ctx, "u", 4, uuid.NewString())
	is.NoErr(err)
	sub := f.submit(t, "u")
	_, err = f.svc.RunOnce(ctx)
	is.NoErr(err)
	is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusFailed)
	is.Equal(f.balance(t, "u"), int64(4)) // refunded

	in := f.svc.Inspector()
	err = in.Retry(ctx, sub.TaskID, false, " ")
	is.True(errors.Is(err, imagegen.ErrInvalidParams)) // a reason is required
	is.NoErr(in.Retry(ctx, sub.TaskID, true, "provider key fixed"))
	is.Equal(f.balance(t, "u"), int64(2)) // charged again
	is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusPending)
	_, err = f.svc.RunOnce(ctx) // fails again: refunded again
	is.NoErr(err)
	is.Equal(f.balance(t, "u"), int64(4))

	is.NoErr(in.Retry(ctx, sub.TaskID, false, "one more, on the house"))
	_, err = f.svc.RunOnce(ctx) // the script is used up: success, and free
	is.NoErr(err)
	is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
	is.Equal(f.balance(t, "u"), int64(4))
	err = in.Retry(ctx, sub.TaskID, false, "again?")
	is.True(errors.Is(err, imagegen.ErrInvalidTransition)) // only failed tasks

	d, err := in.Task(ctx, sub.TaskID)
	is.NoErr(err)
	is.Equal(d.Task.Attempt, 3)
	var refs []string
	for _, e := range d.Ledger {
		refs = append(refs, e.Ref)
	}
	is.Equal(refs, []string{
		imagegen.ChargeRef(sub.TaskID), imagegen.RefundRef(sub.TaskID),
		imagegen.RechargeRef(sub.TaskID, 1), imagegen.RerefundRef(sub.TaskID, 1),
	})
	is.True(strings.Contains(logs.String(), `"reason":"provider key fixed"`))
	is.True(strings.Contains(logs.String(), `"reason":"one more, on the house"`))
}

func TestInspectorCancelsListsAndPurges(t *testing.T) {
	is := is.New(t)
	var logs bytes.Buffer
	f := newFixture(t, imagegentest.NewModel(1), logTo(&logs))
	for _, owner := range []string{"a", "b"} {
		_, err := f.svc.Grant(ctx, owner, 5, uuid.NewString())
		is.NoErr(err)
	}
	first := f.submit(t, "a")
	second := f.submit(t, "b")
	in := f.svc.Inspector()

	page, err := in.ListTasks(ctx, imagegen.TaskFilter{}, 0, "")
	is.NoErr(err)
	is.Equal(len(page.Tasks), 2)
	is.Equal(page.Tasks[0].ID, second.TaskID) // newest first, every owner
	_, err = in.ListTasks(ctx, imagegen.TaskFilter{Status: "bogus"}, 0, "")
	is.True(errors.Is(err, imagegen.ErrInvalidParams))
	st, err := in.QueueStats(ctx)
	is.NoErr(err)
	is.Equal(st.Pending, int64(2))

	is.NoErr(in.Cancel(ctx, second.TaskID, "abuse report 42"))
	is.Equal(f.balance(t, "b"), int64(5)) // refunded
	task := f.task(t, "b", second.TaskID)
	is.Equal(task.ErrorCode, imagegen.CodeCancelled)
	err = in.Cancel(ctx, second.TaskID, "twice")
	is.True(errors.Is(err, imagegen.ErrInvalidTransition))
	err = in.Cancel(ctx, "no-such-task", "typo")
	is.True(errors.Is(err, imagegen.ErrTaskNotFound))
	is.True(strings.Contains(logs.String(), `"reason":"abuse report 42"`))

	_, err = f.svc.RunOnce(ctx)
	is.NoErr(err)
	f.clock.Advance(2 * time.Hour) // past the fixture's retention
	n, err := in.Purge(ctx, "disk pressure")
	is.NoErr(err)
	is.Equal(n, 2)
	_, err = in.Task(ctx, first.TaskID)
	is.True(errors.Is(err, imagegen.ErrTaskNotFound))
	is.True(strings.Contains(logs.String(), `"action":"purge","tasks":2,"reason":"disk pressure"`))
}
