package wire_test

import (
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// MessageEvent reads back the event MessageID names.
func TestMessageEventOfMessageID(t *testing.T) {
	for _, e := range []imagegen.CallbackEvent{imagegen.EventCompleted, imagegen.EventProcessing} {
		if got := wire.MessageEvent(wire.MessageID("tsk_1", e)); got != e {
			t.Errorf("MessageEvent(MessageID(tsk_1, %s)) = %s", e, got)
		}
	}
	if got := wire.MessageEvent(""); got != imagegen.EventCompleted {
		t.Errorf("MessageEvent(\"\") = %s, want completed", got)
	}
}
