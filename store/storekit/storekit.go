// Package storekit is the kit of a Store backend's author: the rules
// every imagegen.Store applies to what it is asked to keep (CheckNewTask,
// CheckLedgerEntry, CheckNewKey, refusing with ErrInvalidStoreInput), the
// messages it writes on the tasks it fails or gives back
// (ExpiredLeaseMessage, ReleasedMessage), how it fails a task a claim
// could not read (FailUnreadable), and how it names and keeps
// callback deliveries (WebhookID, TaskWebhookIDs, ParseWebhookID, ClaimedWebhookID,
// ParseClaimedWebhookID, EventsField). They are
// written once here so that backends cannot drift apart; the service and
// its users never need them. The conformance suite is package storetest.
package storekit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/imagegen/imagegen"
)

// ErrInvalidStoreInput: a Store was handed a record that breaks the
// contract (a programming error of the caller, never a client's).
var ErrInvalidStoreInput = errors.New("storekit: invalid store input")

// CheckNewTask is what CreateTask requires of t.
func CheckNewTask(t *imagegen.Task) error {
	switch {
	case t == nil || t.ID == "" || t.Owner == "":
		return fmt.Errorf("%w: a task needs an ID and an Owner", ErrInvalidStoreInput)
	case t.Cost <= 0:
		return fmt.Errorf("%w: task cost must be positive (got %d)", ErrInvalidStoreInput, t.Cost)
	}
	return nil
}

// CheckLedgerEntry is what AddEntry requires of e: an owner, a reference
// not reserved for task charges and refunds, and a non-zero amount.
func CheckLedgerEntry(e imagegen.LedgerEntry) error {
	switch {
	case e.Owner == "" || e.Ref == "" || e.Amount == 0:
		return fmt.Errorf("%w: a ledger entry needs an Owner, a Ref and a non-zero Amount", ErrInvalidStoreInput)
	case strings.HasPrefix(e.Ref, imagegen.ChargeRefPrefix) || strings.HasPrefix(e.Ref, imagegen.RefundRefPrefix):
		return fmt.Errorf("%w: ledger reference %q is reserved for task charges and refunds", ErrInvalidStoreInput, e.Ref)
	}
	return nil
}

// CheckNewKey is what PutKey requires of k.
func CheckNewKey(k imagegen.APIKey) error {
	if k.ID == "" || k.Owner == "" || k.Hash == "" {
		return fmt.Errorf("%w: an API key needs an ID, an Owner and a Hash", ErrInvalidStoreInput)
	}
	return nil
}

// ReleasedMessage is the LastError of a task given back by
// Store.ReleaseTask.
const ReleasedMessage = "worker shut down"

// ExpiredLeaseMessage is the error of a task that failed because its
// lease expired on its last allowed attempt (its workers kept dying).
func ExpiredLeaseMessage(attempts int) string {
	return fmt.Sprintf("image generation did not finish (%d attempts)", attempts)
}

// processingHookSuffix ends the delivery ID of a processing event; a
// completed event's delivery ID is the task id itself.
const processingHookSuffix = ":processing"

// WebhookID is the ID of the delivery of task taskID's event e: unique
// per task and event, so both events of a task can wait at once.
func WebhookID(taskID string, e imagegen.CallbackEvent) string {
	if e == imagegen.EventProcessing {
		return taskID + processingHookSuffix
	}
	return taskID
}

// TaskWebhookIDs are the IDs of every delivery a task may have queued,
// one per event (WebhookID): what a store drops when the task is
// requeued.
func TaskWebhookIDs(taskID string) []string {
	return []string{WebhookID(taskID, imagegen.EventCompleted), WebhookID(taskID, imagegen.EventProcessing)}
}

// ParseWebhookID splits a delivery ID (a WebhookID, not a claimed one:
// see ParseClaimedWebhookID) into its task id and event.
func ParseWebhookID(id string) (taskID string, e imagegen.CallbackEvent) {
	if t, ok := strings.CutSuffix(id, processingHookSuffix); ok {
		return t, imagegen.EventProcessing
	}
	return id, imagegen.EventCompleted
}

// claimSep separates a claimed delivery's ID from the lease end of its
// claim.
const claimSep = "@"

// ClaimedWebhookID is the ID ClaimWebhooks hands out for one claim of
// delivery id (a WebhookID): id, "@" and leaseEnd, the end of the lease
// that claim set, as an integer in the store's own unit (what it keeps
// as the delivery's due time: milliseconds on Redis, microseconds on
// PostgreSQL and in memory). AckWebhook, RetryWebhook and
// PostponeWebhook given it act only while the delivery is still leased
// by that claim (its due time is leaseEnd), so that a stale attempt
// cannot touch the delivery that a later ending of the task queued
// under the same WebhookID.
func ClaimedWebhookID(id string, leaseEnd int64) string {
	return id + claimSep + strconv.FormatInt(leaseEnd, 10)
}

// ParseClaimedWebhookID splits an ID from ClaimedWebhookID into the
// delivery's WebhookID and the lease end of its claim; claimed is false
// for a plain WebhookID (id is then returned as it is), which the
// store acts on whatever state the delivery is in. It reads from the
// last "@", whose suffix is an integer (digits, perhaps after a minus
// sign, for a clock before 1970), so task ids holding "@" still parse;
// only a plain ID whose task id itself ends in "@" and digits would be
// taken for a claimed one, and stores' task ids never do.
func ParseClaimedWebhookID(claimID string) (id string, leaseEnd int64, claimed bool) {
	i := strings.LastIndex(claimID, claimSep)
	if i < 0 {
		return claimID, 0, false
	}
	suffix := claimID[i+1:]
	end, err := strconv.ParseInt(suffix, 10, 64) // digits, perhaps after a sign
	if err != nil || suffix[0] == '+' {
		return claimID, 0, false
	}
	return claimID[:i], end, true
}

// EventsField is how stores keep a task's callback_events: the names
// joined by commas, "" for the default (completed only).
func EventsField(events []imagegen.CallbackEvent) string {
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = string(e)
	}
	return strings.Join(names, ",")
}

// FailUnreadable fails, through fail (the store's FailTask, fenced by
// each task's claimed attempt, so refunded by the store's own path),
// each task a claim leased but could not read (CodeInternal,
// imagegen.UnreadableTaskMessage), and returns the error ClaimTasks
// returns with the tasks it could read: an *imagegen.UnreadableTasksError,
// or nil when bad is empty. A task whose id could not be read, or whose
// failure failed, is left leased: RecoverExpired takes it back when its
// lease runs out, and fails it after MaxAttempts.
func FailUnreadable(ctx context.Context, fail func(ctx context.Context, id string, attempt int, f imagegen.Failure) (int64, error), bad []imagegen.UnreadableTask) error {
	if len(bad) == 0 {
		return nil
	}
	f := imagegen.Failure{Code: imagegen.CodeInternal, Message: imagegen.UnreadableTaskMessage}
	for i := range bad {
		t := &bad[i]
		if t.ID == "" {
			t.FailErr = errors.New("its id could not be read")
			continue
		}
		t.Refund, t.FailErr = fail(ctx, t.ID, t.Attempt, f)
		t.Failed = t.FailErr == nil
	}
	return &imagegen.UnreadableTasksError{Tasks: bad}
}

// ListScanPages is how many pages' worth of an owner's tasks one call
// of ListTasks reads at most (ListScan).
const ListScanPages = 20

// ListScan is the most of an owner's tasks one call of ListTasks with
// this limit reads: ListScanPages pages of limit+1. A status filter
// that matches fewer within them answers a short page, even an empty
// one, whose Next goes on below the last task read, so that a filter
// matching little costs each request a bounded read, not one of every
// task the owner keeps.
func ListScan(limit int) int { return ListScanPages * (max(limit, 1) + 1) }
