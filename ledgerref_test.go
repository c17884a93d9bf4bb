package imagegen_test

import (
	"testing"

	"github.com/imagegen/imagegen"
)

func TestLedgerEntryReference(t *testing.T) {
	for _, tt := range []struct {
		kind      imagegen.LedgerKind
		ref, want string
	}{
		{imagegen.LedgerCharge, "task:3f0c", "3f0c"},
		{imagegen.LedgerRefund, "refund:3f0c", "3f0c"},
		{imagegen.LedgerCharge, "task:3f0c:retry:2", "3f0c:retry:2"},
		{imagegen.LedgerRefund, "refund:3f0c:retry:2", "3f0c:retry:2"},
		{imagegen.LedgerGrant, "grant:demo-credits", "demo-credits"},
		{imagegen.LedgerWeb, "web:order-981", "order-981"},
		{imagegen.LedgerGrant, "invoice-7", "invoice-7"}, // written without a prefix
	} {
		e := imagegen.LedgerEntry{Kind: tt.kind, Ref: tt.ref}
		if got := e.Reference(); got != tt.want {
			t.Errorf("%s %q: Reference() = %q, want %q", tt.kind, tt.ref, got, tt.want)
		}
	}
}
