package comfyui_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// A POST /prompt that ComfyUI took, but whose answer the adapter never
// read, does not leave the prompt on the GPU for nobody while the task
// is retried and queues it again: the adapter finds it in GET /queue,
// by the prompt_id it chose (servers since 0.3.45) or by its client_id
// (older servers, which ignore the prompt_id and mint their own), and
// takes it off the queue or interrupts it. The error stays what it was:
// ErrMaybeAccepted, retryable, for an answer cut short.
func TestAPromptWhoseAnswerIsLostIsStopped(t *testing.T) {
	garbled := answer{Status: 200, Header: map[string]string{"Content-Type": "text/html"}, Body: []byte("<html>OK</html>")}
	for _, tc := range []struct {
		name      string
		oldServer bool
		state     string // the prompt's, when the answer is lost
		answer    answer
		stop      string // the call that stops it
		outcome   string
	}{
		{"cut short, pending", false, "pending", cutShort, dequeueCall, "taken off the queue"},
		{"cut short, running", false, "running", cutShort, interruptCall, "interrupted"},
		{"cut short, pending, on a server that ignores prompt_id", true, "pending", cutShort, dequeueCall, "taken off the queue"},
		{"cut short, running, on a server that ignores prompt_id", true, "running", cutShort, interruptCall, "interrupted"},
		{"a 200 that is not the answer, pending", false, "pending", garbled, dequeueCall, "taken off the queue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t)
			f.stuck, f.oldServer, f.takenAnswer = tc.state, tc.oldServer, &tc.answer
			m, _ := newModel(t, f, comfyui.Config{Logger: quiet})
			_, err := generate(t, m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
			me := providertest.ModelError(t, err)
			is.True(me.Retryable) // the task queue runs it again
			if tc.answer.Body[0] != '<' {
				is.True(errors.Is(err, provider.ErrMaybeAccepted))
			}
			is.Equal(f.Kinds(), []string{wsCall, promptCall, queueCall, tc.stop})
			sent := f.prompts(t)[0]["prompt_id"].(string)
			states := f.states()
			is.Equal(len(states), 1)
			for id, state := range states {
				is.Equal(state, map[string]string{"pending": "deleted", "running": "interrupted"}[tc.state])
				is.Equal(id == sent, !tc.oldServer) // an old server's id is its own
				is.True(strings.Contains(me.Err.Error(), "prompt "+id+" "+tc.outcome))
			}
		})
	}
}

// A prompt whose answer was lost but that ComfyUI never queued (the
// proxy's cut, say) is looked for, not found, and nothing is stopped.
func TestALostAnswerOfAPromptNeverQueuedStopsNothing(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.Queue(promptCall, cutShort) // answered without queuing
	m, _ := newModel(t, f, comfyui.Config{Logger: quiet})
	_, err := generate(t, m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
	is.True(errors.Is(err, provider.ErrMaybeAccepted))
	is.Equal(f.Kinds(), []string{wsCall, promptCall, queueCall})
	is.True(strings.Contains(providertest.ModelError(t, err).Err.Error(), "not in the queue"))
}

// Each POST /prompt carries a prompt_id of its own, a UUID in the
// canonical form the newest servers require, and the adapter follows
// the id the server answers.
func TestEachPromptHasItsOwnPromptID(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, comfyui.Config{Logger: quiet})
	for range 2 {
		imgs, err := generate(t, m, providertest.T2I("a fox", imagegen.Aspect1x1), nil)
		is.NoErr(err)
		is.Equal(len(imgs), 1)
	}
	p := f.prompts(t)
	first, second := p[0]["prompt_id"].(string), p[1]["prompt_id"].(string)
	is.True(first != second)
	for _, c := range f.Calls() {
		if c.kind == historyCall {
			is.True(c.path == "/history/"+first || c.path == "/history/"+second)
		}
	}
}

// A generation whose context ends while POST /prompt waits for its
// answer, after ComfyUI queued the prompt, takes it off the queue too.
func TestAPromptQueuedAsTheContextEndsIsStopped(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.stuck, f.takenAnswer, f.onTaken = "pending", &answer{Hang: true}, cancel
	m, _ := newModel(t, f, comfyui.Config{Logger: quiet})
	req := providertest.T2I("a fox", imagegen.Aspect1x1)
	plan, err := m.Plan(req)
	is.NoErr(err)
	_, err = m.Generate(ctx, imagegen.Generation{TaskID: "task-1", Model: plan.Model, Request: req, Attempt: 1})
	is.True(err != nil)
	is.Equal(f.Kinds(), []string{wsCall, promptCall, queueCall, dequeueCall})
	for _, state := range f.states() {
		is.Equal(state, "deleted")
	}
}
