package imagegen_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// A model's progress reaches the task in the store, at most once every
// ProgressInterval and only when it moved by MinProgressStep; values
// out of 0..1 are clamped.
func TestProgressIsWrittenRarely(t *testing.T) {
	// The writes run on a goroutine of their own: in a bubble,
	// synctest.Wait returns once a write taken has been made.
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		var f fixture
		var seen []float64 // the task's progress in the store after each report
		report := func(ctx context.Context, g imagegen.Generation, p float64) {
			g.ReportProgress(p)
			synctest.Wait()
			task, err := f.store.Task(ctx, "u", g.TaskID)
			is.NoErr(err)
			seen = append(seen, task.Progress)
		}
		f = newFixture(t, imagegentest.NewModel(1, func(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
			report(ctx, g, 0.1) // the first: written
			report(ctx, g, 0.3) // within the interval: dropped
			f.clock.Advance(imagegen.ProgressInterval)
			report(ctx, g, 0.105) // moved too little since the last write: dropped
			report(ctx, g, 0.5)   // written
			f.clock.Advance(imagegen.ProgressInterval)
			report(ctx, g, 7) // clamped to 1
			return imagegentest.Succeed()(ctx, g)
		}))
		sub := f.submitFunded(t, "u")
		is.True(f.runOnce(t))
		is.Equal(seen, []float64{0.1, 0.1, 0.1, 0.5, 1})
		is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
	})
}

// slowProgress is a store whose progress writes wait until release is
// closed (or their context ends), and which logs, in order, the
// progress writes it is asked for and the outcomes recorded.
type slowProgress struct {
	imagegen.Store
	release chan struct{}

	mu            sync.Mutex
	log           []string // "progress 0.1", "complete"
	writing, peak int      // progress writes under way; most at once
}

func (s *slowProgress) note(event string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, event)
}

func (s *slowProgress) events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func (s *slowProgress) SetProgress(ctx context.Context, id string, attempt int, p float64) error {
	s.mu.Lock()
	s.log = append(s.log, fmt.Sprint("progress ", p))
	s.writing++
	s.peak = max(s.peak, s.writing)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.writing--
		s.mu.Unlock()
	}()
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Store.SetProgress(ctx, id, attempt, p)
}

func (s *slowProgress) CompleteTask(ctx context.Context, id string, attempt int, images []imagegen.Image, seed *int64) error {
	s.note("complete")
	return s.Store.CompleteTask(ctx, id, attempt, images, seed)
}

// A slow progress write does not hold up the model's progress callback:
// the callback returns at once, the writes go one at a time, and a
// report taken while one is under way is replaced by a later one (the
// latest value wins).
func TestSlowProgressWriteDoesNotBlockTheModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		var slow *slowProgress
		var f fixture
		var blocked time.Duration // the model's time in its callbacks (the bubble's clock)
		f = newFixture(t, imagegentest.NewModel(1, func(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
			report := func(p float64) {
				start := time.Now()
				g.ReportProgress(p)
				blocked += time.Since(start)
			}
			report(0.1) // written, slowly
			synctest.Wait()
			f.clock.Advance(imagegen.ProgressInterval)
			report(0.5) // taken, then replaced by 0.9 before its turn
			f.clock.Advance(imagegen.ProgressInterval)
			report(0.9)
			synctest.Wait()
			is.Equal(slow.events(), []string{"progress 0.1"}) // still under way
			close(slow.release)
			synctest.Wait()
			return imagegentest.Succeed()(ctx, g)
		}), func(c *imagegen.Config) {
			slow = &slowProgress{Store: c.Store, release: make(chan struct{})}
			c.Store = slow
		})
		sub := f.submitFunded(t, "u")
		is.True(f.runOnce(t))
		is.Equal(blocked, time.Duration(0))
		is.Equal(slow.events(), []string{"progress 0.1", "progress 0.9", "complete"})
		is.Equal(slow.peak, 1)
		is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
	})
}

// Nothing is written once the attempt has ended: the write under way is
// cancelled, the one queued behind it dropped, and the outcome recorded
// after both.
func TestNoProgressIsWrittenAfterTheAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		var slow *slowProgress
		var f fixture
		f = newFixture(t, imagegentest.NewModel(1, func(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
			g.ReportProgress(0.1) // under way until the attempt ends
			synctest.Wait()
			f.clock.Advance(imagegen.ProgressInterval)
			g.ReportProgress(0.5) // queued behind it
			synctest.Wait()
			return imagegentest.Succeed()(ctx, g)
		}), func(c *imagegen.Config) {
			slow = &slowProgress{Store: c.Store, release: make(chan struct{})}
			c.Store = slow
		})
		sub := f.submitFunded(t, "u")
		is.True(f.runOnce(t))
		close(slow.release)
		synctest.Wait()
		is.Equal(slow.events(), []string{"progress 0.1", "complete"})
		is.Equal(f.task(t, "u", sub.TaskID).Status, imagegen.StatusSuccess)
	})
}

// A model that reports nothing leaves the progress at 0, and a report
// after the task ended elsewhere changes nothing.
func TestProgressOfAnEndedAttemptIsDropped(t *testing.T) {
	is := is.New(t)
	var f fixture
	f = newFixture(t, imagegentest.NewModel(1, func(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		is.NoErr(errOf(f.store.CancelTask(ctx, "u", g.TaskID, imagegen.CancelParams{})))
		g.ReportProgress(0.5) // the lease is lost: dropped
		return nil, ctx.Err()
	}))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(task.Progress, 0.0)
}
