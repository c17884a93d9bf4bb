package imagegen

import (
	"context"
	"fmt"
	"strings"
)

// Inspector is the operator's view of a service's store, across owners:
// queue statistics, listing and showing any task, retrying a failed
// task, cancelling a task and purging expired data. Every change it makes
// is logged (Config.Logger, message "operator action") with the
// operator's reason, and its credit effects go through the ledger
// (RechargeRef, the usual refund). Get one with Service.Inspector.
type Inspector struct{ s *Service }

// Inspector returns the operator's view of s's store.
func (s *Service) Inspector() *Inspector { return &Inspector{s: s} }

// TaskDetail is one task as an operator sees it: the task (with its
// attempts, last error and request id) and the ledger entries that it
// caused.
type TaskDetail struct {
	Task   *Task
	Ledger []LedgerEntry // the task's charges and refunds, oldest first
}

// QueueStats counts pending and processing tasks and measures the wait
// of the oldest ready one.
func (in *Inspector) QueueStats(ctx context.Context) (QueueStats, error) {
	st, err := in.s.cfg.Store.QueueStats(ctx)
	if err != nil {
		return st, fmt.Errorf("imagegen: queue stats: %w", err)
	}
	return st, nil
}

// ListTasks returns a page of tasks of every owner (or f.Owner's)
// matching f, newest first: up to limit (0 means DefaultListLimit, at
// most MaxListLimit), after cursor. A page may be short with a Next
// cursor when the filter matches little.
func (in *Inspector) ListTasks(ctx context.Context, f TaskFilter, limit int, cursor string) (TaskPage, error) {
	if f.Status != "" && !f.Status.Valid() {
		return TaskPage{}, errBadStatus()
	}
	limit, err := checkPage(limit, cursor)
	if err != nil {
		return TaskPage{}, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return TaskPage{}, invalid("since", "must be before until")
	}
	page, err := in.s.cfg.Store.ListAllTasks(ctx, f, limit, cursor)
	return storePage("all tasks", page, err)
}

// Task returns any owner's task with its ledger entries, or
// ErrTaskNotFound.
func (in *Inspector) Task(ctx context.Context, id string) (TaskDetail, error) {
	if !taskIDOK(id) { // names no task; PostgreSQL would refuse it (a server error)
		return TaskDetail{}, fmt.Errorf("imagegen: task: %w", ErrTaskNotFound)
	}
	t, err := in.s.cfg.Store.TaskByID(ctx, id)
	if err != nil {
		return TaskDetail{}, fmt.Errorf("imagegen: task: %w", err)
	}
	entries, err := in.s.cfg.Store.Ledger(ctx, t.Owner)
	if err != nil {
		return TaskDetail{}, fmt.Errorf("imagegen: ledger: %w", err)
	}
	d := TaskDetail{Task: t}
	for _, e := range entries {
		if e.Ref == ChargeRef(id) || e.Ref == RefundRef(id) ||
			strings.HasPrefix(e.Ref, ChargeRef(id)+":") || strings.HasPrefix(e.Ref, RefundRef(id)+":") {
			d.Ledger = append(d.Ledger, e)
		}
	}
	return d, nil
}

// Retry gives a failed task back to the queue. With recharge its cost is
// charged again (and refunded again should it fail again); without, it
// runs free. reason is required and logged. Errors: ErrTaskNotFound,
// ErrInvalidTransition (the task is not failed), ErrInsufficientCredits
// (recharge, balance short), ErrDuplicateEntry (recharge, and the task
// was recharged at this attempt already: retried with a charge, then
// cancelled or failed before a worker took it; or recharge, and the task
// was never refunded: its owner's cancel kept its started charge; retry
// it free). The store's requeue makes the last check again, in the step
// that charges (Store.RequeueTask), so it holds when other operators,
// workers and the owner act on the task between Retry's read and its
// requeue.
func (in *Inspector) Retry(ctx context.Context, id string, recharge bool, reason string) error {
	if err := checkReason(reason); err != nil {
		return err
	}
	if !taskIDOK(id) {
		return fmt.Errorf("imagegen: retry: %w", ErrTaskNotFound)
	}
	t, err := in.s.cfg.Store.TaskByID(ctx, id)
	if err != nil {
		return fmt.Errorf("imagegen: retry: %w", err)
	}
	// Refused early for its clear message; the store refuses it again
	// should the task come to this state after this read.
	if recharge && t.Status == StatusFailed && !t.Refunded {
		return fmt.Errorf("imagegen: retry: task %s kept its charge (its owner cancelled it once it had begun; nothing was refunded), so a recharge would charge it twice: retry it free: %w", id, ErrDuplicateEntry)
	}
	if err := in.s.cfg.Store.RequeueTask(ctx, id, recharge); err != nil {
		return fmt.Errorf("imagegen: retry: %w", err)
	}
	if recharge {
		in.s.cfg.Observer.CreditsCharged(t.Cost)
	}
	in.s.wakeWorkers()
	in.s.log.InfoContext(ctx, "operator action", "action", "retry", "task_id", id, "owner", t.Owner,
		"recharge", recharge, "cost", t.Cost, "previous_error", t.Error, "reason", reason)
	return nil
}

// Cancel fails any owner's pending or processing task (CodeCancelled)
// and refunds it in full, a running one too: the cancel is the
// operator's choice, not the owner's (whose own cancel keeps a started
// generation's charge). reason is required and logged. Errors:
// ErrTaskNotFound, ErrInvalidTransition (finished).
func (in *Inspector) Cancel(ctx context.Context, id, reason string) error {
	if err := checkReason(reason); err != nil {
		return err
	}
	if !taskIDOK(id) {
		return fmt.Errorf("imagegen: cancel: %w", ErrTaskNotFound)
	}
	t, err := in.s.cfg.Store.TaskByID(ctx, id)
	if err != nil {
		return fmt.Errorf("imagegen: cancel: %w", err)
	}
	refund, err := in.s.cancel(ctx, t.Owner, id, t, CancelParams{})
	if err != nil {
		return err
	}
	in.s.log.InfoContext(ctx, "operator action", "action", "cancel", "task_id", id, "owner", t.Owner,
		"refunded", refund, "reason", reason)
	return nil
}

// Purge removes at once what retention has made invisible and returns
// how many tasks it removed (or unindexed). reason is required and
// logged.
func (in *Inspector) Purge(ctx context.Context, reason string) (int, error) {
	if err := checkReason(reason); err != nil {
		return 0, err
	}
	n, err := in.s.cfg.Store.PurgeExpired(ctx)
	if err != nil {
		return n, fmt.Errorf("imagegen: purge: %w", err)
	}
	in.s.log.InfoContext(ctx, "operator action", "action", "purge", "tasks", n, "reason", reason)
	return n, nil
}

func checkReason(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return invalid("reason", "is required: say why, for the record")
	}
	return nil
}
