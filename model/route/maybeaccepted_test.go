package route_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/route"
)

// A model whose provider may have taken the request (its answer was
// lost: provider.ErrMaybeAccepted) does not fall back to the next
// model within the attempt, which would be a second paid generation:
// the retryable error ends the chain, and the service's attempt-level
// retry decides.
func TestMaybeAcceptedDoesNotFallBack(t *testing.T) {
	is := is.New(t)
	lost := provider.NetworkError("a", fmt.Errorf("%w: reading its HTTP 200 answer: unexpected EOF", provider.ErrMaybeAccepted))
	b := imagegentest.NewModel(1)
	chain, err := route.NewFallback("chain", route.Entry{Name: "a", Model: imagegentest.NewModel(1, imagegentest.Fail(lost))}, route.Entry{Name: "b", Model: b})
	is.NoErr(err)
	_, err = chain.Generate(ctx, imagegen.Generation{Request: t2i})
	is.Equal(len(b.Calls()), 0)
	is.True(errors.Is(err, provider.ErrMaybeAccepted))
	var me *imagegen.ModelError
	is.True(errors.As(err, &me) && me.Retryable)
}
