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

// followProgress reports this generation's progress to g while it
// runs, until the returned stop is called; it does nothing when g
// follows no progress. Every ProgressInterval it reads how far the
// server's running job has come (GET /sdapi/v1/progress), and passes it
// on only when that job is this generation's: the answer names no job
// (its state.job is the kind, "scripts_txt2img"), and an sdapi server
// runs one job at a time for all its clients, so while this one waits
// behind another client's job (another user's task, perhaps) that job's
// progress is not this task's. So the read is bracketed by two of
// POST /internal/progress about this job (its force_task_id, id): when
// both say it is the one running, it ran all along in between (a job
// runs once and the server runs one at a time), and the read was its.
// Until the job starts, only /internal/progress is asked; a read that
// fails is skipped. A server without /internal/progress reports none.
func (m *Model) followProgress(ctx context.Context, g imagegen.Generation, id string) (stop func()) {
	if g.Progress == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		ours := false // the job was running at the last /internal/progress read
		for provider.Wait(ctx, m.client.Policy.Clock, m.cfg.ProgressInterval) == nil {
			if !ours {
				if ours, _ = m.running(ctx, id); !ours {
					continue
				}
			}
			p, err := m.serverProgress(ctx)
			ours, _ = m.running(ctx, id)
			if err == nil && ours && p.State.JobCount > 0 && p.Progress > 0 {
				g.ReportProgress(p.Progress)
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// progress is the answer of GET /sdapi/v1/progress (ProgressResponse):
// how far the server's running job has come, 0 to 1, whoever's it is,
// and the server's state (job_count 0: nothing runs).
type progress struct {
	Progress float64 `json:"progress"`
	State    struct {
		JobCount int `json:"job_count"`
	} `json:"state"`
}

// serverProgress reads GET /sdapi/v1/progress, without the preview
// image (skip_current_image), which the server would otherwise encode
// on every read.
func (m *Model) serverProgress(ctx context.Context) (progress, error) {
	var p progress
	err := m.read(ctx, provider.Get(m.client.URL(pathProgress+"?skip_current_image=true"), m.header()), &p)
	return p, err
}

// taskProgress is the answer of POST /internal/progress for one job id:
// whether it is the running job (the adapter reads no more of it).
type taskProgress struct {
	Active bool `json:"active"`
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

// running reports whether the server's running job is id: it asks
// about that job (POST /internal/progress).
func (m *Model) running(ctx context.Context, id string) (bool, error) {
	post, err := provider.PostJSON(m.client.URL(pathTaskProgress), map[string]any{"id_task": id, "id_live_preview": -1, "live_preview": false}, m.header())
	if err != nil {
		return false, err
	}
	var p taskProgress
	err = m.read(ctx, post, &p)
	return p.Active, err
}

// read makes one call, not retried (a progress read that fails is
// skipped), and decodes its JSON answer into out.
func (m *Model) read(ctx context.Context, call provider.BuildFunc, out any) error {
	resp, err := m.client.DoOnce(ctx, call)
	if err != nil {
		return err
	}
	return provider.DecodeJSON(Provider, resp, out)
}
