package imagegen

import "strings"

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
