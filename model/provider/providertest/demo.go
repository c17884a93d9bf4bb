package providertest

import (
	"context"
	"fmt"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// Demo is what an adapter's examples print: it makes a model of c with
// newModel (an adapter's New), runs req on it as the service does
// (Generate), and describes the outcome: the plan's model and cost and
// the first image's type and size, or the error.
func Demo[C any, M imagegen.Model](newModel func(C) (M, error), c C, req imagegen.Request) string {
	m, err := newModel(c)
	if err != nil {
		return "New: " + err.Error()
	}
	plan, err := m.Plan(req)
	if err != nil {
		return "Plan: " + err.Error()
	}
	imgs, err := Generate(context.Background(), m, req)
	if err != nil {
		return "Generate: " + err.Error()
	}
	size, err := provider.ImageSize(imgs[0].Data)
	if err != nil {
		return "the image: " + err.Error()
	}
	return fmt.Sprintf("%s %d %s %v", plan.Model, plan.Cost, imgs[0].ContentType, size)
}
