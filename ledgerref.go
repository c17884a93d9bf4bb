package imagegen

import (
	"strconv"
	"strings"
)

// Reference is the entry's reference as users see it, the same in the
// API, the console and the CLI: Ref without the store's kind prefix,
// since Kind says the kind. A charge or refund reads as its task's id
// ("<id>", or "<id>:retry:<n>" for an operator's recharge), a grant or
// web charge as the reference the host app gave.
func (e LedgerEntry) Reference() string {
	for _, prefix := range []string{ChargeRefPrefix, RefundRefPrefix, string(e.Kind) + ":"} {
		if ref, ok := strings.CutPrefix(e.Ref, prefix); ok {
			return ref
		}
	}
	return e.Ref
}

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
