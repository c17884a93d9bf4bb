package a1111

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// followProgress asks the server every ProgressInterval how far this
// generation's job (its force_task_id, id) has come, while it runs, and
// passes the answer to g, until the returned stop is called. It does
// nothing when g follows no progress. A read that fails is skipped. The
// job is named (POST /internal/progress) rather than the server asked
// how its running job does (GET /sdapi/v1/progress): an sdapi server
// runs one job at a time for all its clients, and while this generation
// waits behind another client's job, that job's progress is not this
// task's to show.
func (m *Model) followProgress(ctx context.Context, g imagegen.Generation, id string) (stop func()) {
	if g.Progress == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for provider.Wait(ctx, m.client.Policy.Clock, m.cfg.ProgressInterval) == nil {
			p, err := m.jobProgress(ctx, id)
			if err == nil && p.Active && p.Progress != nil && *p.Progress > 0 {
				g.ReportProgress(*p.Progress)
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// taskProgress is the answer of POST /internal/progress for one job id:
// whether it is the running job, and then how far it has come (0 to 1).
type taskProgress struct {
	Active    bool     `json:"active"`
	Queued    bool     `json:"queued"`
	Completed bool     `json:"completed"`
	Progress  *float64 `json:"progress"`
}

// interruptTimeout bounds the calls made after ctx ended.
const interruptTimeout = 10 * time.Second

// abandon stops this generation's job on the server when ctx ended
// before the answer: the server's running job is interrupted only when
// /internal/progress says it is this one (its force_task_id). A job
// still queued, or another client's running, is left alone (the sdapi
// cannot remove a queued job, and an interrupt stops whatever runs).
// err, the call's failure, is returned with the outcome in its cause.
func (m *Model) abandon(ctx context.Context, id string, err error) error {
	var me *imagegen.ModelError
	if !errors.As(err, &me) {
		me = provider.NetworkError(Provider, err)
	}
	out := *me
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), interruptTimeout)
	defer cancel()
	ours, ierr := m.running(ictx, id)
	switch {
	case ierr != nil:
		out.Err = fmt.Errorf("%w (job %s left running: its state could not be read: %v)", me.Err, id, ierr)
	case !ours:
		out.Err = fmt.Errorf("%w (job %s not running: nothing interrupted)", me.Err, id)
	default:
		post := provider.Post(m.client.URL(pathInterrupt), "application/json", nil, m.header())
		if _, ierr := m.client.DoOnce(ictx, post); ierr != nil {
			out.Err = fmt.Errorf("%w (interrupting job %s failed: %v)", me.Err, id, ierr)
		} else {
			out.Err = fmt.Errorf("%w (job %s interrupted)", me.Err, id)
		}
	}
	return &out
}

// running reports whether the server's running job is id.
func (m *Model) running(ctx context.Context, id string) (bool, error) {
	p, err := m.jobProgress(ctx, id)
	return p.Active, err
}

// jobProgress asks the server about its job id (POST /internal/progress).
func (m *Model) jobProgress(ctx context.Context, id string) (taskProgress, error) {
	post, err := provider.PostJSON(m.client.URL(pathTaskProgress), map[string]any{"id_task": id, "id_live_preview": -1, "live_preview": false}, m.header())
	if err != nil {
		return taskProgress{}, err
	}
	resp, err := m.client.DoOnce(ctx, post)
	if err != nil {
		return taskProgress{}, err
	}
	var p taskProgress
	if err := provider.DecodeJSON(Provider, resp, &p); err != nil {
		return taskProgress{}, err
	}
	return p, nil
}
