package wire

import (
	"time"

	"github.com/imagegen/imagegen"
)

// Submitted is the body of a submit's answer (201, POST /api/v1/generate;
// docs/api.md, "Submit a task"): imagegen.Submission on the wire.
type Submitted struct {
	TaskID           string          `json:"task_id"`
	Status           imagegen.Status `json:"status"`
	CreditsUsed      int64           `json:"credits_used"`
	CreditsRemaining int64           `json:"credits_remaining"`
}

// TaskBody is the task as the API shows it (docs/api.md, "Query a task"): images
// only on success, error only on failure, nothing else while pending or
// processing.
type TaskBody struct {
	TaskID string          `json:"task_id"`
	Status imagegen.Status `json:"status"`
	Images []string        `json:"images,omitempty"`
	Error  string          `json:"error,omitempty"`
	// ErrorCode is an extension: with error, a machine-readable reason
	// (content_policy, invalid_image_input, timeout, provider_error,
	// cancelled, internal).
	ErrorCode imagegen.ErrorCode `json:"error_code,omitempty"`
	// TaskDetails is set in the full view only (?view=full).
	*TaskDetails
}

// TaskDetails is what the full view adds to a task (an optional
// extension; the basic view never carries it).
type TaskDetails struct {
	// CreatedAt is when the task was submitted (RFC 3339, UTC).
	CreatedAt time.Time `json:"created_at"`
	// StartedAt is when a worker first took the task; absent before.
	StartedAt *time.Time `json:"started_at,omitempty"`
	// FinishedAt is when the task reached success or failed.
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Model names the model that ran, or will run, the task.
	Model string `json:"model"`
	// Seed is the seed the model was given: the request's, or one drawn
	// at submit; once the task succeeded, the one the provider reports it
	// used when that is another. Null when the model does not take seeds.
	Seed *int64 `json:"seed"`
	// QueuePosition, while the task is pending, is how many pending
	// tasks (of every user) are ahead of it in the work queue.
	QueuePosition *int `json:"queue_position,omitempty"`
	// EstimatedStartAt, while the task is pending, is when it may start:
	// its queue position at the recent rate of starts (an estimate;
	// absent when nothing started lately).
	EstimatedStartAt *time.Time `json:"estimated_start_at,omitempty"`
	// Progress, while the task is processing on a model that reports
	// it (ComfyUI, sdapi servers, Black Forest Labs), is how far the
	// generation has come, from 0 to 1; absent until it reports.
	Progress *float64 `json:"progress,omitempty"`
}

// TaskList is the body of GET /api/v1/tasks.
type TaskList struct {
	Tasks []TaskBody `json:"tasks"`
	// NextCursor, when present, fetches the next page (?cursor=).
	NextCursor string `json:"next_cursor,omitempty"`
}

// Credits is the body of GET /api/v1/credits.
type Credits struct {
	CreditsRemaining int64 `json:"credits_remaining"`
}
