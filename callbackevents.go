package imagegen

import (
	"slices"
)

// CallbackEvent names a task event that can be delivered to the task's
// callback_url (the request's callback_events, in the manner of
// Replicate's webhook_events_filter).
type CallbackEvent string

// The callback events.
const (
	// EventProcessing: a worker started the task (once, on its first claim).
	EventProcessing CallbackEvent = "processing"
	// EventCompleted: the task reached success or failed. The default.
	EventCompleted CallbackEvent = "completed"
)

// Wants reports whether a task submitted with callback_events events
// asks for e; no events means completed only.
func Wants(events []CallbackEvent, e CallbackEvent) bool {
	if len(events) == 0 {
		return e == EventCompleted
	}
	return slices.Contains(events, e)
}

func checkCallbackEvents(events []CallbackEvent, hasURL bool) error {
	if events == nil {
		return nil
	}
	if !hasURL {
		return invalid("callback_events", "needs a callback_url")
	}
	if len(events) == 0 {
		return invalid("callback_events", "must name at least one event (processing, completed)")
	}
	for i, e := range events {
		if e != EventProcessing && e != EventCompleted {
			return invalid("callback_events", "item %d must be processing or completed", i)
		}
		if slices.Contains(events[:i], e) {
			return invalid("callback_events", "names %s twice", e)
		}
	}
	return nil
}
