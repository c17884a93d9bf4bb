// Package route combines models: Chooser picks a model per request (by
// scene, or any rule of the operator's) and reports that model's price
// at submit; Fallback tries the next model when one is unavailable, but
// not when one refuses the content, nor when one's provider may have
// taken the request and lost its answer (provider.ErrMaybeAccepted: a
// second model would be a second paid generation). Both are imagegen.Models, so they
// nest: a chooser of fallback chains, a chain of choosers.
//
// Pricing: the price is fixed at submit (Plan) and charged once, however
// many models a fallback chain then tries. A chain's price is its first
// model's unless Entry.Cost says otherwise.
package route

import (
	"context"
	"errors"
	"fmt"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// Entry is a model under a route, with the operator's price for it.
type Entry struct {
	Name  string         // recorded on tasks (Plan.Model); unique within a route
	Model imagegen.Model // the provider adapter (or another route)
	// Cost overrides the model's own price (1 to 3); 0 keeps the model's.
	Cost int64
}

func (e Entry) plan(req imagegen.Request) (imagegen.Plan, error) {
	p, err := e.Model.Plan(req)
	if err != nil {
		return p, err
	}
	if e.Cost != 0 {
		p.Cost = e.Cost
	}
	return p, nil
}

func checkEntries(entries []Entry) error {
	if len(entries) == 0 {
		return errors.New("route: at least one model is required")
	}
	seen := map[string]bool{}
	for i, e := range entries {
		switch {
		case e.Name == "" || e.Model == nil:
			return fmt.Errorf("route: entry %d needs a Name and a Model", i)
		case seen[e.Name]:
			return fmt.Errorf("route: model name %q is used twice", e.Name)
		case e.Cost != 0 && (e.Cost < imagegen.MinCost || e.Cost > imagegen.MaxCost):
			return fmt.Errorf("route: model %q: Cost must be %d to %d (got %d)", e.Name, imagegen.MinCost, imagegen.MaxCost, e.Cost)
		}
		seen[e.Name] = true
	}
	return nil
}

// Chooser runs each request on the model its rule picks.
type Chooser struct {
	entries map[string]Entry
	choose  func(imagegen.Request) string
}

var _ imagegen.Model = (*Chooser)(nil)

// NewChooser returns a Chooser over entries; choose names the entry for
// a request (it must return one of the entries' names).
func NewChooser(choose func(imagegen.Request) string, entries ...Entry) (*Chooser, error) {
	if err := checkEntries(entries); err != nil {
		return nil, err
	}
	if choose == nil {
		return nil, errors.New("route: a choose function is required")
	}
	c := &Chooser{entries: map[string]Entry{}, choose: choose}
	for _, e := range entries {
		c.entries[e.Name] = e
	}
	return c, nil
}

// ByScene returns a Chooser that runs text-to-image on one model and
// image-to-image on another.
func ByScene(textToImage, imageToImage Entry) (*Chooser, error) {
	return NewChooser(func(r imagegen.Request) string {
		if r.Scene == imagegen.SceneImageToImage {
			return imageToImage.Name
		}
		return textToImage.Name
	}, textToImage, imageToImage)
}

// Plan asks the chosen model and records the entry's name.
func (c *Chooser) Plan(req imagegen.Request) (imagegen.Plan, error) {
	name := c.choose(req)
	e, ok := c.entries[name]
	if !ok {
		return imagegen.Plan{}, fmt.Errorf("route: the rule chose %q, which is not a model of this route", name)
	}
	p, err := e.plan(req)
	if err != nil {
		return p, err
	}
	return imagegen.Plan{Model: e.Name, Cost: p.Cost, Seeded: p.Seeded}, nil
}

// Generate runs the model chosen at submit.
func (c *Chooser) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	e, ok := c.entries[g.Model]
	if !ok {
		return nil, &imagegen.ModelError{Provider: "route", Message: "the model chosen for this task is no longer configured", Err: fmt.Errorf("unknown model %q", g.Model)}
	}
	inner, err := e.Model.Plan(g.Request) // the inner model's own name, for nested routes
	if err != nil {
		return nil, &imagegen.ModelError{Provider: e.Name, Message: "the request no longer fits the model", Err: err}
	}
	g.Model = inner.Model
	return e.Model.Generate(ctx, g)
}

// Fallback tries its models in order until one generates: it moves on
// when a model is unavailable (a retryable error: rate limit, 5xx,
// timeout, network) or misconfigured (ModelError.Misconfigured: a bad
// key, no billing), and stops at a refusal or bad input, which the next
// provider would likely repeat.
type Fallback struct {
	name    string
	entries []Entry
}

var _ imagegen.Model = (*Fallback)(nil)

// NewFallback returns a chain named name over entries, tried in order.
func NewFallback(name string, entries ...Entry) (*Fallback, error) {
	if err := checkEntries(entries); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, errors.New("route: a fallback chain needs a name")
	}
	return &Fallback{name: name, entries: entries}, nil
}

// Plan prices the request with the first model that accepts it. The
// chain honours a seed only if every model that accepts the request
// does, since any of them may end up running it.
func (f *Fallback) Plan(req imagegen.Request) (imagegen.Plan, error) {
	var first error
	plan := imagegen.Plan{Model: f.name, Seeded: true}
	accepted := false
	for _, e := range f.entries {
		p, err := e.plan(req)
		switch {
		case err == nil && !accepted:
			accepted, plan.Cost = true, p.Cost
			plan.Seeded = p.Seeded
		case err == nil:
			plan.Seeded = plan.Seeded && p.Seeded
		case first == nil:
			first = err
		}
	}
	if !accepted {
		return imagegen.Plan{}, first
	}
	return plan, nil
}

// Generate tries the models in order, the next only when one is
// unavailable or misconfigured and did not possibly take the request
// (provider.ErrMaybeAccepted ends the chain). It reports each model's
// answer, and each move to the next, to g.Events when set. When none generates,
// it returns the last retryable error if any model was only unavailable
// (the service retries the chain), else the last error.
func (f *Fallback) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	var last, unavailable error // unavailable: the last retryable error
	lastName := ""
	for _, e := range f.entries {
		p, err := e.Model.Plan(g.Request)
		if err != nil {
			continue // this model cannot take the request; the next may
		}
		if last != nil && g.Events != nil {
			g.Events.FellBack(lastName, e.Name, last)
		}
		inner := g
		inner.Model = p.Model
		inner.Events = nil // this chain reports its own models' answers
		imgs, err := e.Model.Generate(ctx, inner)
		if g.Events != nil {
			g.Events.ProviderAnswered(e.Name, err)
		}
		if err == nil {
			return imgs, nil
		}
		last, lastName = err, e.Name
		var me *imagegen.ModelError
		if !errors.As(err, &me) || !(me.Retryable || me.Misconfigured) || ctx.Err() != nil {
			return nil, err // a refusal, bad input, or our own deadline: do not try elsewhere
		}
		if errors.Is(err, provider.ErrMaybeAccepted) {
			// The model's provider may have taken the request, and be
			// generating (and charging) still: another model now would be
			// a second paid generation. The attempt ends; the service's
			// attempt-level retry decides.
			return nil, err
		}
		if me.Retryable {
			unavailable = err
		}
	}
	if unavailable != nil {
		// A model that was only unavailable may make the image on the
		// task's next attempt: a later model's misconfiguration must not
		// fail (and refund) the task.
		return nil, unavailable
	}
	if last == nil {
		last = &imagegen.ModelError{Provider: f.name, Message: "no model of this route can take the request"}
	}
	return nil, last
}
