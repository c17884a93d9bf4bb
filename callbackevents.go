package imagegen

import (
	"slices"
	"strings"
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

// processingHookSuffix ends the delivery ID of a processing event; a
// completed event's delivery ID is the task id itself.
const processingHookSuffix = ":processing"

// WebhookID is the ID of the delivery of task taskID's event e: unique
// per task and event, so both events of a task can wait at once.
func WebhookID(taskID string, e CallbackEvent) string {
	if e == EventProcessing {
		return taskID + processingHookSuffix
	}
	return taskID
}

// ParseWebhookID splits a delivery ID into its task id and event.
func ParseWebhookID(id string) (taskID string, e CallbackEvent) {
	if t, ok := strings.CutSuffix(id, processingHookSuffix); ok {
		return t, EventProcessing
	}
	return id, EventCompleted
}

// EventsField is how stores keep a task's callback_events: the names
// joined by commas, "" for the default (completed only).
func EventsField(events []CallbackEvent) string {
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = string(e)
	}
	return strings.Join(names, ",")
}
