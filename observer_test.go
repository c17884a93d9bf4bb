package imagegen_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/model/route"
)

// recorder is an Observer that writes down every call.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) TaskSubmitted(scene imagegen.Scene, model string, cost int64) {
	r.add("submitted %s %s %d", scene, model, cost)
}
func (r *recorder) TaskClaimed(model string, queued time.Duration) {
	r.add("claimed %s %v", model, queued)
}
func (r *recorder) TaskFinished(model string, status imagegen.Status, code imagegen.ErrorCode, took time.Duration) {
	r.add("finished %s %s %q", model, status, code)
}
func (r *recorder) CreditsRefunded(credits int64) { r.add("refunded %d", credits) }
func (r *recorder) CreditsCharged(credits int64)  { r.add("charged %d", credits) }
func (r *recorder) ProviderRequest(provider, outcome string) {
	r.add("provider %s %s", provider, outcome)
}
func (r *recorder) Fallback(from, to string) { r.add("fallback %s -> %s", from, to) }
func (r *recorder) HTTPRequest(route string, code int, _ time.Duration) {
	r.add("http %s %d", route, code)
}
func (r *recorder) WebhookDelivery(outcome string) { r.add("webhook %s", outcome) }

func TestObserverSeesATaskLife(t *testing.T) {
	is := is.New(t)
	rec := &recorder{}
	unavailable := &imagegen.ModelError{Provider: "scripted", Retryable: true, Message: "busy"}
	refused := &imagegen.ModelError{Provider: "scripted", Refused: true}
	model := imagegentest.NewModel(2, imagegentest.Fail(unavailable), imagegentest.Succeed(), imagegentest.Fail(refused))
	f := newFixture(t, model, func(c *imagegen.Config) { c.Observer = rec; c.RetryBackoff = 1 })
	_, err := f.svc.Grant(ctx, "u", 10, uuid.NewString())
	is.NoErr(err)

	ok := f.submit(t, "u")
	f.clock.Advance(3 * time.Second)
	_, err = f.svc.RunOnce(ctx) // unavailable: retried
	is.NoErr(err)
	f.clock.Advance(time.Second)
	_, err = f.svc.RunOnce(ctx) // success
	is.NoErr(err)
	is.Equal(f.task(t, "u", ok.TaskID).Status, imagegen.StatusSuccess)
	f.submit(t, "u")
	_, err = f.svc.RunOnce(ctx) // refused
	is.NoErr(err)
	gone := f.submit(t, "u")
	is.NoErr(f.svc.Cancel(ctx, "u", gone.TaskID))

	is.Equal(rec.list(), []string{
		"submitted text-to-image scripted 2",
		"claimed scripted 3s",
		"provider scripted unavailable",
		"claimed scripted 999.999999ms", // ready again after its 1ns backoff, claimed a second later
		"provider scripted success",
		`finished scripted success ""`,
		"submitted text-to-image scripted 2",
		"claimed scripted 0s",
		"provider scripted refused",
		`finished scripted failed "content_policy"`,
		"refunded 2",
		"submitted text-to-image scripted 2",
		`finished scripted failed "cancelled"`,
		"refunded 2",
	})
}

func TestFallbackReportsEachProvider(t *testing.T) {
	is := is.New(t)
	rec := &recorder{}
	down := &imagegen.ModelError{Provider: "first", Retryable: true, Message: "503"}
	chain, err := route.NewFallback("chain",
		route.Entry{Name: "first", Model: imagegentest.NewModel(1, imagegentest.Fail(down))},
		route.Entry{Name: "second", Model: imagegentest.NewModel(1)},
	)
	is.NoErr(err)
	f := newFixture(t, nil, func(c *imagegen.Config) { c.Model = chain; c.Observer = rec })
	_, err = f.svc.Grant(ctx, "u", 1, uuid.NewString())
	is.NoErr(err)
	sub, err := f.svc.Submit(context.Background(), "u", textReq)
	is.NoErr(err)
	_, err = f.svc.RunOnce(ctx)
	is.NoErr(err)
	is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
	is.Equal(rec.list()[2:], []string{
		"provider first unavailable",
		"fallback first -> second",
		"provider second success",
		`finished chain success ""`,
	})
}
