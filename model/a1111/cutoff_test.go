package a1111_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/a1111"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// An HTTP client whose own timeout is shorter than the context (an
// operator's client under a raised GenerateTimeout) cuts the txt2img
// call while the server still generates: the job is interrupted, as when
// the context ends, and the call is not sent again (a second POST would
// queue the same generation behind the first).
func TestClientTimeoutInterruptsAndDoesNotRepost(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.Queue(txt2imgCall, answer{Hang: true})
	hc := providertest.LoopbackClient(t, f.Server)
	hc.Timeout = 100 * time.Millisecond
	m, _ := newModel(t, f, a1111.Config{Config: provider.Config{HTTPClient: hc}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
	is.Equal(f.Kinds(), []string{txt2imgCall, taskProgressCall, interruptCall})
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.True(errors.Is(err, provider.ErrMaybeAccepted))
}

// A context without a deadline is bounded by Config.MaxDuration, since
// the default client sets no bound on the answer: the job is then
// interrupted, and sent once.
func TestNoDeadlineIsBoundedByMaxDuration(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.Queue(txt2imgCall, answer{Hang: true})
	m, _ := newModel(t, f, a1111.Config{Config: provider.Config{MaxDuration: 100 * time.Millisecond}})
	_, err := generate(t.Context(), m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
	is.Equal(f.Kinds(), []string{txt2imgCall, taskProgressCall, interruptCall})
	is.True(errors.Is(err, context.DeadlineExceeded))
}
