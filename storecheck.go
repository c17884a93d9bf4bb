package imagegen

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Rules that every Store applies to what it is asked to keep, written once
// here so that backends cannot drift apart. Each check returns an error
// wrapping ErrInvalidStoreInput; a Store returns it unchanged and stores
// nothing.

// ErrInvalidStoreInput: a Store was handed a record that breaks the
// contract (a programming error of the caller, never a client's).
var ErrInvalidStoreInput = errors.New("imagegen: invalid store input")

// Ledger references that belong to the store's own entries: a task's
// charge is "task:<id>", its refund "refund:<id>". AddEntry refuses them.
const (
	ChargeRefPrefix = "task:"
	RefundRefPrefix = "refund:"
)

// ChargeRef is the ledger reference of task id's charge.
func ChargeRef(id string) string { return ChargeRefPrefix + id }

// RefundRef is the ledger reference of task id's refund.
func RefundRef(id string) string { return RefundRefPrefix + id }

// RechargeRef is the ledger reference of the charge made when an
// operator retries failed task id (at the given attempt) with a recharge.
func RechargeRef(id string, attempt int) string {
	return ChargeRefPrefix + id + ":retry:" + strconv.Itoa(attempt)
}

// RerefundRef is the ledger reference of the refund of that recharge,
// should the retried task fail again.
func RerefundRef(id string, attempt int) string {
	return RefundRefPrefix + id + ":retry:" + strconv.Itoa(attempt)
}

// CheckNewTask is what CreateTask requires of t.
func CheckNewTask(t *Task) error {
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
func CheckLedgerEntry(e LedgerEntry) error {
	switch {
	case e.Owner == "" || e.Ref == "" || e.Amount == 0:
		return fmt.Errorf("%w: a ledger entry needs an Owner, a Ref and a non-zero Amount", ErrInvalidStoreInput)
	case strings.HasPrefix(e.Ref, ChargeRefPrefix) || strings.HasPrefix(e.Ref, RefundRefPrefix):
		return fmt.Errorf("%w: ledger reference %q is reserved for task charges and refunds", ErrInvalidStoreInput, e.Ref)
	}
	return nil
}

// CheckNewKey is what PutKey requires of k.
func CheckNewKey(k APIKey) error {
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
