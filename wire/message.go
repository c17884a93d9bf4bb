package wire

import (
	"strings"

	"github.com/imagegen/imagegen"
)

// processingSuffix ends the webhook-id of a processing delivery.
const processingSuffix = "_processing"

// MessageID is the webhook-id of the delivery of a task's event: the
// same on every retry of it, and different for each event of a task
// ("msg_<task id>" for completed, "msg_<task id>_processing" for
// processing).
func MessageID(taskID string, event imagegen.CallbackEvent) string {
	if event == imagegen.EventProcessing {
		return "msg_" + taskID + processingSuffix
	}
	return "msg_" + taskID
}

// MessageEvent is the event that a delivery's webhook-id names (see
// MessageID): processing for one ending in "_processing", else
// completed. Unlike the webhook-event header, the webhook-id is signed,
// so a receiver that reads the event from it after Verify cannot be
// told another event by someone who replays a captured delivery with
// that header changed.
func MessageEvent(id string) imagegen.CallbackEvent {
	if strings.HasPrefix(id, "msg_") && strings.HasSuffix(id, processingSuffix) {
		return imagegen.EventProcessing
	}
	return imagegen.EventCompleted
}
