package route_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/model/route"
	"github.com/imagegen/imagegen/store/memory"
)

var (
	ctx         = context.Background()
	unavailable = &imagegen.ModelError{Provider: "a", Retryable: true, Message: "provider unavailable", Err: errors.New("503")}
	refusal     = &imagegen.ModelError{Provider: "a", Refused: true, Message: "blocked"}
	t2i         = imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}
	i2i         = imagegen.Request{Scene: imagegen.SceneImageToImage, Prompt: "p", ImageInput: []string{"https://example.com/a.png"}}
)

func service(t *testing.T, m imagegen.Model) *imagegen.Service {
	svc, err := imagegen.New(imagegen.Config{Store: testenv.Memory(t, memory.Config{}), Model: m, Logger: slog.New(slog.DiscardHandler)})
	is.New(t).NoErr(err)
	_, err = svc.Grant(ctx, "u", 10, uuid.NewString())
	is.New(t).NoErr(err)
	return svc
}

func TestFallbackToTheNextProviderChargesOnce(t *testing.T) {
	is := is.New(t)
	a := imagegentest.NewModel(1, imagegentest.Fail(unavailable))
	b := imagegentest.NewModel(1)
	chain, err := route.NewFallback("a-then-b", route.Entry{Name: "a", Model: a, Cost: 3}, route.Entry{Name: "b", Model: b, Cost: 1})
	is.NoErr(err)
	svc := service(t, chain)
	sub, err := svc.Submit(ctx, "u", t2i)
	is.NoErr(err)
	is.Equal(sub.CreditsUsed, int64(3)) // the route's price, fixed at submit
	ran, err := svc.RunOnce(ctx)
	is.NoErr(err)
	is.True(ran)
	task, err := svc.Task(ctx, "u", sub.TaskID)
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusSuccess) // made by b
	is.Equal(task.Attempt, 1)
	is.Equal(task.Model, "a-then-b")
	is.Equal(len(a.Calls()), 1)
	is.Equal(len(b.Calls()), 1)
	bal, err := svc.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(bal, int64(7)) // charged once
}

func TestRefusalDoesNotFallBack(t *testing.T) {
	is := is.New(t)
	a := imagegentest.NewModel(1, imagegentest.Fail(refusal))
	b := imagegentest.NewModel(1)
	chain, err := route.NewFallback("chain", route.Entry{Name: "a", Model: a}, route.Entry{Name: "b", Model: b})
	is.NoErr(err)
	_, err = chain.Generate(ctx, imagegen.Generation{Request: t2i})
	is.Equal(err, error(refusal))
	is.Equal(len(b.Calls()), 0)
}

func TestMisconfiguredProviderFallsBack(t *testing.T) {
	is := is.New(t)
	badKey := &imagegen.ModelError{Provider: "a", Misconfigured: true, Message: "the image service is misconfigured"}
	b := imagegentest.NewModel(1)
	chain, err := route.NewFallback("chain", route.Entry{Name: "a", Model: imagegentest.NewModel(1, imagegentest.Fail(badKey))}, route.Entry{Name: "b", Model: b})
	is.NoErr(err)
	imgs, err := chain.Generate(ctx, imagegen.Generation{Request: t2i})
	is.NoErr(err)
	is.True(len(imgs) > 0)
	is.Equal(len(b.Calls()), 1)
}

func TestEveryProviderDown(t *testing.T) {
	is := is.New(t)
	chain, err := route.NewFallback("chain",
		route.Entry{Name: "a", Model: imagegentest.NewModel(1, imagegentest.Fail(unavailable))},
		route.Entry{Name: "b", Model: imagegentest.NewModel(1, imagegentest.Fail(unavailable))})
	is.NoErr(err)
	_, err = chain.Generate(ctx, imagegen.Generation{Request: t2i})
	var me *imagegen.ModelError
	is.True(errors.As(err, &me))
	is.True(me.Retryable) // the service retries the whole chain later
}

func TestChooserByScene(t *testing.T) {
	is := is.New(t)
	cheap, rich := imagegentest.NewModel(1), imagegentest.NewModel(1)
	c, err := route.ByScene(route.Entry{Name: "cheap", Model: cheap, Cost: 1}, route.Entry{Name: "rich", Model: rich, Cost: 2})
	is.NoErr(err)
	p, err := c.Plan(t2i)
	is.NoErr(err)
	is.Equal(p, imagegen.Plan{Model: "cheap", Cost: 1})
	p, err = c.Plan(i2i)
	is.NoErr(err)
	is.Equal(p, imagegen.Plan{Model: "rich", Cost: 2})

	svc := service(t, c)
	sub, err := svc.Submit(ctx, "u", i2i)
	is.NoErr(err)
	is.Equal(sub.CreditsUsed, int64(2))
	_, err = svc.RunOnce(ctx)
	is.NoErr(err)
	is.Equal(len(rich.Calls()), 1) // run on the model chosen at submit
	is.Equal(len(cheap.Calls()), 0)

	_, err = c.Generate(ctx, imagegen.Generation{Model: "gone", Request: t2i})
	is.True(err != nil)
}

func TestRouteValidation(t *testing.T) {
	is := is.New(t)
	m := imagegentest.NewModel(1)
	_, err := route.NewFallback("x")
	is.True(err != nil)
	_, err = route.NewFallback("x", route.Entry{Name: "a", Model: m}, route.Entry{Name: "a", Model: m})
	is.True(err != nil)
	_, err = route.NewFallback("x", route.Entry{Name: "a", Model: m, Cost: 4})
	is.True(err != nil)
	_, err = route.NewChooser(nil, route.Entry{Name: "a", Model: m})
	is.True(err != nil)
}
