package route_test

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/model/route"
)

// A chain whose first model is only unavailable for now and whose last
// is misconfigured must leave the task to be retried: failing it (and
// refunding it) on the last model's error loses a task that the first
// model would make on the next attempt.
func TestFallbackUnavailableThenMisconfiguredIsRetried(t *testing.T) {
	is := is.New(t)
	badKey := &imagegen.ModelError{Provider: "b", Misconfigured: true, Message: "the image service is misconfigured"}
	a := imagegentest.NewModel(1, imagegentest.Fail(unavailable)) // then succeeds
	b := imagegentest.NewModel(1, imagegentest.Fail(badKey), imagegentest.Fail(badKey))
	chain, err := route.NewFallback("chain", route.Entry{Name: "a", Model: a}, route.Entry{Name: "b", Model: b})
	is.NoErr(err)

	_, err = chain.Generate(ctx, imagegen.Generation{Request: t2i})
	var me *imagegen.ModelError
	is.True(errors.As(err, &me))
	is.True(me.Retryable) // a was only unavailable: the service retries the chain

	svc := service(t, chain)
	sub, err := svc.Submit(ctx, "u", t2i)
	is.NoErr(err)
	a.Then(imagegentest.Fail(unavailable))
	ran, err := svc.RunOnce(ctx)
	is.NoErr(err)
	is.True(ran)
	task, err := svc.Task(ctx, "u", sub.TaskID)
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusPending) // retried, not failed
	bal, err := svc.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(bal, int64(9)) // not refunded: the task still runs
}
