package imagegen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/imagegen/imagegen/internal/pgtext"
	"github.com/imagegen/imagegen/internal/retry"
	"github.com/imagegen/imagegen/internal/slots"
	"github.com/imagegen/imagegen/internal/yield"
)

// recordBacklog × Config.Workers bounds the outcomes that wait to be
// stored while the next generations run (see Config.Workers).
const recordBacklog = 4

// recordTimeout bounds the store calls that record an outcome: an
// attempt's (the image bytes and the success, or the retry or failure)
// or an idempotent submission's.
const recordTimeout = 10 * time.Second

// Run executes generations until ctx ends: it claims ready tasks (at most
// Config.Workers at a time), runs them on the model with a lease renewed
// until their outcome is stored, and regularly sends tasks whose lease
// expired (their worker died) back to the queue. When ctx ends it stops claiming, waits up to
// Config.ShutdownTimeout for running generations, then cancels the rest and
// gives their tasks back to the queue (as it does the tasks of a claim
// under way when ctx ends). It returns nil after a clean stop,
// the only stop it has today: a failing store is logged and tried again,
// not returned (server.Server.Run and imagegen serve pass on a non-nil
// error all the same). It also deletes image bytes without a record (SweepBlobs) every
// Config.BlobSweepInterval, and writes the provider statistics it counted
// to the store every ProviderStatsFlushInterval and once more when it
// stops (FlushProviderStats).
func (s *Service) Run(ctx context.Context) error {
	// Generations outlive ctx by up to ShutdownTimeout.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()

	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		s.recoverLoop(ctx)
	}()
	go func() {
		defer wg.Done()
		s.providerStatsLoop(ctx)
	}()
	go func() {
		defer wg.Done()
		s.sweepLoop(ctx) // workers write image bytes, so they delete those left behind
	}()

	claimCtx, stopClaims := s.claimContext(ctx)
	defer stopClaims()

	pool := slots.New(s.cfg.Workers)
	recording := make(chan struct{}, recordBacklog*s.cfg.Workers)
	// run runs a claimed task to its end in a runner goroutine: the
	// generation, then its outcome stored without holding a generation
	// slot, so the next task starts while this one commits (and outcomes
	// that wait together share a commit); at most recordBacklog×Workers
	// outcomes wait to be stored.
	run := func(t *Task) {
		log := s.attemptLog(t)
		lease := s.holdLease(workCtx, t, log) // renewed until the outcome is stored
		out := s.generate(workCtx, t, log, lease)
		recording <- struct{}{}
		pool.Give(1)
		s.record(workCtx, t, out)
		lease.release()
		<-recording
	}
	// Runners are kept for the next task rather than started for each:
	// a new goroutine grows its stack to what a generation and its
	// commit take every time (stack copies were a tenth of the worker
	// process's CPU with an instant model). A runner is started only
	// when none is free, so there are at most as many as tasks that can
	// be in hand at once, (1 + recordBacklog) × Workers.
	runs := make(chan *Task)
	var running sync.WaitGroup
claim:
	for {
		// Wait for one free slot, then take every other free one, and
		// claim that many tasks in one store call.
		free := pool.TakeFree(ctx)
		if free == 0 {
			break claim
		}
		// Slots given back together (a batch of fast generations ending
		// one after another) make one claim: let the goroutines that are
		// about to give theirs back run first, as long as that yields
		// more. One claim of a few tasks costs a store about as much as
		// one of many (on PostgreSQL a claim of one task took 0.5 ms of
		// server time, of fifteen 0.6 ms); with an instant model half the
		// claims took one task. A slot that frees alone (a slow model)
		// costs one Gosched.
		free = yield.WhileGrowing(free, cap(pool), func(n int) int { return n + pool.TakeMore() })
		tasks, err := s.claimUntilStop(ctx, claimCtx, free)
		pool.Give(free - len(tasks))
		if err != nil {
			if ctx.Err() != nil {
				break claim
			}
			if !errors.Is(err, ErrNoTask) {
				s.log.ErrorContext(ctx, "claim tasks", "err", err)
			}
			select {
			case <-s.wake:
			case <-s.cfg.WorkReady:
			case <-s.cfg.Clock.After(s.cfg.PollInterval):
			case <-ctx.Done():
			}
			continue
		}
		for _, t := range tasks {
			select {
			case runs <- t: // a runner that is done with its last task takes it
			default:
				running.Add(1)
				go func() {
					defer running.Done()
					run(t)
					for t := range runs {
						run(t)
					}
				}()
			}
		}
	}
	close(runs)

	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	select {
	case <-done:
	case <-s.cfg.Clock.After(s.cfg.ShutdownTimeout):
		s.log.Warn("shutdown timeout: cancelling running generations")
		cancelWork()
		<-done
	}
	wg.Wait()
	s.finalProviderStatsFlush(ctx)
	return nil
}

// RunOnce claims one ready task and runs it to the end of this attempt in
// the calling goroutine. It reports whether there was a task. Tests use it
// to drive work deterministically. The provider statistics it counts
// reach the store with the next FlushProviderStats.
//
// It claims as Run does (claimUntilStop): a ctx that ends while the
// claim is under way does not lose a task the store leased meanwhile
// (it would stay leased to no one until the lease ran out, an attempt
// used up); the task is given back with no attempt counted, and RunOnce
// returns ctx's error.
func (s *Service) RunOnce(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("imagegen: claim: %w", err)
	}
	claimCtx, stopClaim := s.claimContext(ctx)
	tasks, err := s.claimUntilStop(ctx, claimCtx, 1)
	stopClaim()
	if errors.Is(err, ErrNoTask) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("imagegen: claim: %w", err)
	}
	s.process(ctx, tasks[0])
	return true, nil
}

// claim claims up to n ready tasks. A store that claims none must say
// ErrNoTask; an empty batch with no error is taken as ErrNoTask too, so
// that the worker neither indexes it nor claims again without a pause.
// An error the store returned with tasks (an *UnreadableTasksError, a
// *PartialClaimError, or both) is logged, and counted where it names
// tasks the store failed (claimedWithError); the tasks are run.
func (s *Service) claim(ctx context.Context, n int) ([]*Task, error) {
	tasks, err := s.cfg.Store.ClaimTasks(ctx, ClaimParams{Lease: s.cfg.LeaseDuration, N: n, Limits: s.cfg.Limits})
	if s.claimedWithError(ctx, err, len(tasks)) {
		err = nil
	}
	if err == nil && len(tasks) == 0 {
		return nil, ErrNoTask
	}
	return tasks, err
}

// Recover sends tasks whose lease expired back to the queue, or fails and
// refunds them after MaxAttempts, and returns how many it moved. Each
// task it fails is logged and counted (Observer.TaskFinished with
// CodeInternal, Observer.CreditsRefunded), like a failure in a worker.
// Run calls it regularly.
func (s *Service) Recover(ctx context.Context) (int, error) {
	rec, err := s.cfg.Store.RecoverExpired(ctx, s.cfg.MaxAttempts)
	for _, t := range rec.Failed {
		s.cfg.Observer.TaskFinished(t.Model, StatusFailed, CodeInternal, 0)
		if t.Refund > 0 {
			s.cfg.Observer.CreditsRefunded(t.Refund)
		}
		s.log.WarnContext(ctx, "task failed: its lease expired on its last attempt",
			"task_id", t.ID, "request_id", t.RequestID, "model", t.Model, "attempts", t.Attempts,
			"refunded", t.Refund)
	}
	if err != nil {
		return rec.Moved(), fmt.Errorf("imagegen: recover: %w", err)
	}
	return rec.Moved(), nil
}

func (s *Service) recoverLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.Clock.After(s.cfg.LeaseDuration / 2):
		}
		// On an error, what Recover reports was done (a store may have
		// requeued some tasks and left others): the requeued ones wake
		// the workers all the same.
		n, err := s.Recover(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.ErrorContext(ctx, "recover expired leases", "err", err, "count", n)
		} else if n > 0 {
			s.log.InfoContext(ctx, "recovered tasks with expired leases", "count", n)
		}
		if n > 0 {
			s.wakeWorkers()
		}
	}
}

// process runs one claimed attempt of t and records its outcome, its
// lease renewed until that is stored.
func (s *Service) process(ctx context.Context, t *Task) {
	log := s.attemptLog(t)
	lease := s.holdLease(ctx, t, log)
	defer lease.release()
	s.record(ctx, t, s.generate(ctx, t, log, lease))
}

// attemptLog is the logger of one claimed attempt of t.
func (s *Service) attemptLog(t *Task) *slog.Logger {
	return s.log.With("task_id", t.ID, "request_id", t.RequestID, "attempt", t.Attempt, "model", t.Model)
}

// attempt is how one generation attempt ended, for record.
type attempt struct {
	log       *slog.Logger
	images    []GeneratedImage
	err       error
	took      time.Duration
	timedOut  bool
	cancelled bool // the task ended elsewhere (its owner cancelled it)
	// leaseLost: a renewal found the lease lost (or ended) while the
	// generation ran, and cancelled it.
	leaseLost bool
}

// generate runs one claimed attempt of t on the model; lease, which
// keeps the task's lease renewed, cancels the generation if the lease
// is lost meanwhile.
func (s *Service) generate(ctx context.Context, t *Task, log *slog.Logger, lease *heldLease) attempt {
	queued := max(t.UpdatedAt.Sub(t.RunAfter), 0) // claimed at UpdatedAt
	s.cfg.Observer.TaskClaimed(t.Model, queued)
	log.Info("task claimed", "queued", queued.String())
	genCtx, cancel := context.WithTimeout(ctx, s.cfg.GenerateTimeout)
	defer cancel()

	stopOnLoss := lease.cancelOnLoss(cancel, log)
	cancelled := s.cancelWhenFinishedElsewhere(genCtx, cancel, t)
	events := &taskEvents{log: log, obs: s.cfg.Observer, tally: &s.providers}
	progress := &progressWriter{ctx: genCtx, store: s.cfg.Store, clock: s.cfg.Clock, log: log, id: t.ID, attempt: t.Attempt}
	started := time.Now()
	imgs, err := s.generateRecovering(genCtx, log, Generation{
		TaskID: t.ID, Model: t.Model, Request: t.Request, Attempt: t.Attempt, RequestID: t.RequestID, Events: events,
		Progress: progress.report,
	})
	took := time.Since(started)
	timedOut := errors.Is(genCtx.Err(), context.DeadlineExceeded)
	leaseLost := !stopOnLoss() // false: it had run; a lease lost from now on is the store's to report (record)
	cancel()
	progress.stop() // no progress written once the outcome is
	if !events.reported.Load() {
		events.ProviderAnswered(t.Model, err)
	}
	return attempt{log: log, images: imgs, err: err, took: took, timedOut: timedOut, cancelled: cancelled.Load(), leaseLost: leaseLost}
}

// record stores how attempt a of t ended: success, a retry, a refund, or
// the task given back at shutdown.
func (s *Service) record(ctx context.Context, t *Task, a attempt) {
	log, imgs, err, took, timedOut := a.log, a.images, a.err, a.took, a.timedOut
	if a.cancelled {
		log.Info("task cancelled while it ran; generation stopped")
		return
	}
	if a.leaseLost && err != nil {
		// The generation failed because the lease was lost and it was
		// cancelled, not because the model failed: storing a retry or a
		// failure would blame the provider. The lease ended (the worker
		// stalled past it: the store refuses its renewal, as the task's
		// slot may be another's now), or another attempt or a cancel
		// took the task: recovery, or that other party, settles it.
		log.Warn("lease lost while the generation ran; generation stopped, the task is left to lease recovery")
		return
	}
	if err == nil {
		imgs, err = checkImages(t, imgs)
	}
	if err == nil {
		// complete bounds each Put by BlobTimeout and the record by
		// recordTimeout of its own, even if ctx was cancelled meanwhile.
		err = s.complete(context.WithoutCancel(ctx), t, imgs, usedSeed(log, t, imgs))
		if !errors.Is(err, errImageBytes) {
			s.finished(log, err, t, Failure{}, took, "task succeeded", "images", len(imgs))
			return
		}
		// The BlobStore failed or did not answer (Config.BlobTimeout):
		// the attempt failed like any other, so the task is retried, or
		// failed and refunded on its last attempt.
		log.Warn("could not store the image bytes", "err", err)
	}
	// Record the outcome even if ctx was cancelled meanwhile, with a
	// deadline that starts here: after any image bytes, which have
	// deadlines of their own.
	storeCtx, cancelStore := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancelStore()

	var me *ModelError
	isModelErr := errors.As(err, &me)
	s.pauseOnRetryAfter(storeCtx, log, t, err)
	counted := t.CountedAttempts()
	switch {
	case isModelErr && me.Refused:
		f := Failure{Code: CodeContentPolicy, Message: storableMessage(me.UserMessage())}
		refund, err := s.cfg.Store.FailTask(storeCtx, t.ID, t.Attempt, f)
		s.failed(log, err, t, f, refund, took, "task refused by the model")
	case ctx.Err() != nil && !timedOut:
		// Shutting down: give the task back at once for another worker,
		// without using up one of its attempts.
		err = s.cfg.Store.ReleaseTask(storeCtx, t.ID, t.Attempt)
		s.logOutcome(log, err, "task released on shutdown")
	case counted < s.cfg.MaxAttempts && (timedOut || !isModelErr || me.Retryable):
		delay := max(s.backoff(counted), retryAfter(err))
		lastErr := storableMessage(err.Error())
		err = s.cfg.Store.RetryTask(storeCtx, t.ID, t.Attempt, delay, lastErr)
		s.logOutcome(log, err, "task will be retried", "delay", delay.String(), "cause", lastErr)
	default:
		f := failure(err, timedOut, counted)
		f.Message = storableMessage(f.Message)
		log.Info("generation failed", "cause", err.Error())
		refund, err := s.cfg.Store.FailTask(storeCtx, t.ID, t.Attempt, f)
		s.failed(log, err, t, f, refund, took, "task failed and refunded", "code", f.Code, "reason", f.Message)
	}
}

// finished logs a task's last outcome and, once stored, counts it (and
// its refund, for a failure).
func (s *Service) finished(log *slog.Logger, err error, t *Task, f Failure, took time.Duration, msg string, args ...any) {
	s.logOutcome(log, err, msg, args...)
	if err != nil {
		return
	}
	if f.Code == "" {
		s.cfg.Observer.TaskFinished(t.Model, StatusSuccess, "", took)
		return
	}
	s.cfg.Observer.TaskFinished(t.Model, StatusFailed, f.Code, took)
}

// failed is finished for a failure, which also counts the credits the
// store reports it gave back (none after an operator's free retry).
func (s *Service) failed(log *slog.Logger, err error, t *Task, f Failure, refund int64, took time.Duration, msg string, args ...any) {
	s.finished(log, err, t, f, took, msg, args...)
	if err == nil && refund > 0 {
		s.cfg.Observer.CreditsRefunded(refund)
	}
}

// taskEvents logs and counts what a model reports during one attempt.
type taskEvents struct {
	log      *slog.Logger
	obs      Observer
	tally    *providerTally // the Service's, for the store's provider stats
	reported atomic.Bool
}

func (e *taskEvents) ProviderAnswered(provider string, err error) {
	e.reported.Store(true)
	outcome := ProviderOutcome(err)
	e.obs.ProviderRequest(provider, outcome)
	e.tally.request(provider, outcome)
	if err != nil {
		e.log.Info("provider answered", "provider", provider, "outcome", outcome, "cause", err.Error())
		return
	}
	e.log.Info("provider answered", "provider", provider, "outcome", outcome)
}

func (e *taskEvents) FellBack(from, to string, err error) {
	e.reported.Store(true)
	e.obs.Fallback(from, to)
	e.tally.fallback(from, to)
	e.log.Warn("falling back to the next model", "from", from, "to", to, "cause", fmt.Sprint(err))
}

func (s *Service) logOutcome(log *slog.Logger, err error, msg string, args ...any) {
	switch {
	case err == nil:
		log.Info(msg, args...)
	case errors.Is(err, ErrLeaseLost):
		log.Warn("lease lost before the outcome was stored; another worker owns the task", "outcome", msg)
	default:
		log.Warn("could not store the outcome; the lease will expire and the task be retried", "outcome", msg, "err", err)
	}
}

// backoff is the delay before attempt+1: RetryBackoff doubled per attempt,
// capped, with the upper half jittered so retries of many tasks spread.
func (s *Service) backoff(attempt int) time.Duration {
	return retry.Backoff(attempt-1, s.cfg.RetryBackoff, s.cfg.MaxRetryBackoff, true)
}

// storableMessage is a provider's message (a model's error text, which
// a provider's answer may fill) as every store can keep it: without
// U+0000, its invalid UTF-8 as U+FFFD. PostgreSQL refuses either as a
// statement's argument, which failed the retry or failure's write: the
// task waited out its lease, and the provider's message was lost.
func storableMessage(s string) string {
	if pgtext.Storable(s) {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// failure is what the user is told when an attempt ends the task.
func failure(err error, timedOut bool, attempts int) Failure {
	var me *ModelError
	switch {
	case timedOut:
		return Failure{CodeTimeout, fmt.Sprintf("image generation timed out (%d attempts)", attempts)}
	case errors.As(err, &me) && me.InvalidInput:
		return Failure{CodeInvalidImageInput, me.UserMessage()}
	case errors.As(err, &me) && !me.Retryable:
		return Failure{CodeProviderError, me.UserMessage()}
	case errors.As(err, &me):
		return Failure{CodeProviderError, fmt.Sprintf("%s (%d attempts)", me.UserMessage(), attempts)}
	default:
		return Failure{CodeInternal, fmt.Sprintf("image generation failed (%d attempts)", attempts)}
	}
}

// cancelWhenFinishedElsewhere cancels the generation if the task ends
// while it runs (its owner cancelled it), on stores that announce it.
// Elsewhere the next lease renewal notices (ErrLeaseLost).
// It reports whether it did. A watch may end spuriously (Store.WatchTask:
// a store that may have missed announcements wakes every watcher), so a
// wake-up stops the generation only once a fresh read shows the task
// finished or taken over by another attempt.
func (s *Service) cancelWhenFinishedElsewhere(ctx context.Context, cancel context.CancelFunc, t *Task) *atomic.Bool {
	var cancelled atomic.Bool
	finished, stop, err := s.cfg.Store.WatchTask(ctx, t.ID)
	if err != nil {
		return &cancelled // the lease renewal is the fallback
	}
	go func() {
		defer func() { stop() }()
		for {
			select {
			case <-finished:
			case <-ctx.Done():
				return
			}
			if s.finishedElsewhere(ctx, t) {
				cancelled.Store(true)
				cancel()
				return
			}
			// Spurious: watch again after a pause, then read once more
			// (a finish between the read and the new watch is seen then).
			stop()
			stop = func() {}
			select {
			case <-s.cfg.Clock.After(s.cfg.PollInterval):
			case <-ctx.Done():
				return
			}
			var err error
			if finished, stop, err = s.cfg.Store.WatchTask(ctx, t.ID); err != nil {
				stop = func() {}
				return // the lease renewal is the fallback
			}
			if s.finishedElsewhere(ctx, t) {
				cancelled.Store(true)
				cancel()
				return
			}
		}
	}()
	return &cancelled
}

// finishedElsewhere reports whether attempt t no longer runs the task: it
// finished (cancelled), expired, or another attempt took it over. A read
// that fails says no; the lease renewal is the fallback.
func (s *Service) finishedElsewhere(ctx context.Context, t *Task) bool {
	cur, err := s.cfg.Store.Task(ctx, t.Owner, t.ID)
	if errors.Is(err, ErrTaskNotFound) {
		return true
	}
	return err == nil && (cur.Status.Terminal() || cur.Attempt != t.Attempt)
}
