package comfyui_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// A generation that stops following its prompt for another reason than
// its context (the history unreadable: a proxy's 503 after every retry)
// does not leave the prompt in ComfyUI's queue: the task is retried and
// queues a prompt again, and the first would take the GPU for nothing.
// It is taken off the queue, and the error stays what it was.
func TestPromptStoppedWhenItsHistoryCannotBeRead(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.stuck = "pending"
	f.Queue(historyCall,
		answer{Status: 503, Body: []byte("Service Unavailable")}, answer{Status: 503, Body: []byte("Service Unavailable")},
		answer{Status: 503, Body: []byte("Service Unavailable")}, answer{Status: 503, Body: []byte("Service Unavailable")})
	m, clock := newModel(t, f, comfyui.Config{NoWebsocket: true, Logger: quiet})
	_, err := generate(t, m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)                                 // ComfyUI unavailable: the task is retried
	is.True(strings.Contains(me.Err.Error(), "HTTP 503")) // the cause stays the history's
	is.True(strings.Contains(me.Err.Error(), "taken off the queue"))
	is.Equal(f.Kinds(), []string{promptCall, historyCall, historyCall, historyCall, historyCall, queueCall, dequeueCall})
	is.Equal(len(clock.Waits()), 4) // the poll, then the call's three backoffs
}
