package storekit_test

import (
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// TestClaimedWebhookIDRoundTrips: a claimed ID gives back its delivery's
// WebhookID and lease end, even for task ids holding "@"; a plain ID is
// not taken for a claimed one.
func TestClaimedWebhookIDRoundTrips(t *testing.T) {
	for _, task := range []string{"t1", "a@b", "x@", "@", "u@1x"} {
		for _, e := range []imagegen.CallbackEvent{imagegen.EventCompleted, imagegen.EventProcessing} {
			id := storekit.WebhookID(task, e)
			for _, end := range []int64{0, 1_700_000_000_123, -62135596800000000} {
				got, gotEnd, ok := storekit.ParseClaimedWebhookID(storekit.ClaimedWebhookID(id, end))
				if got != id || gotEnd != end || !ok {
					t.Errorf("ParseClaimedWebhookID(ClaimedWebhookID(%q, %d)) = %q, %d, %v", id, end, got, gotEnd, ok)
				}
				if gotTask, gotEvent := storekit.ParseWebhookID(got); gotTask != task || gotEvent != e {
					t.Errorf("ParseWebhookID(%q) = %q, %q; want %q, %q", got, gotTask, gotEvent, task, e)
				}
			}
			if got, _, ok := storekit.ParseClaimedWebhookID(id); ok || got != id {
				t.Errorf("ParseClaimedWebhookID(%q) = %q, %v; want it plain", id, got, ok)
			}
		}
	}
	for _, plain := range []string{"a@", "a@-", "a@1-2", "a@ 1", "a@99999999999999999999"} {
		if got, _, ok := storekit.ParseClaimedWebhookID(plain); ok || got != plain {
			t.Errorf("ParseClaimedWebhookID(%q) = %q, %v; want it plain", plain, got, ok)
		}
	}
}
