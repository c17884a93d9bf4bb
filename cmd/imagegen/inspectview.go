package main

import (
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// inspectShow is what `imagegen inspect show` prints: the task as an
// operator sees it, spelled as the API spells its bodies (snake_case,
// times in UTC to the millisecond, a time left out until it happened),
// and the ledger entries it caused, as the API shows them.
type inspectShow struct {
	Task   inspectTask        `json:"task"`
	Ledger []wire.LedgerEntry `json:"ledger"`
}

// inspectTask is every field of imagegen.Task an operator may need.
type inspectTask struct {
	TaskID    string             `json:"task_id"`
	Owner     string             `json:"owner"`
	Status    imagegen.Status    `json:"status"`
	Request   imagegen.Request   `json:"request"`
	Model     string             `json:"model"`
	Cost      int64              `json:"cost"`
	RequestID string             `json:"request_id,omitempty"`
	Attempt   int                `json:"attempt"`
	Released  int                `json:"released,omitempty"`
	Images    []string           `json:"images,omitempty"`
	Error     string             `json:"error,omitempty"`
	ErrorCode imagegen.ErrorCode `json:"error_code,omitempty"`
	LastError string             `json:"last_error,omitempty"`
	Refunded  bool               `json:"refunded,omitempty"`

	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  *time.Time `json:"updated_at,omitempty"`
	RunAfter   *time.Time `json:"run_after,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
}

// newInspectShow renders d.
func newInspectShow(d imagegen.TaskDetail) inspectShow {
	t := d.Task
	out := inspectShow{
		Task: inspectTask{
			TaskID: t.ID, Owner: t.Owner, Status: t.Status, Request: t.Request, Model: t.Model, Cost: t.Cost,
			RequestID: t.RequestID, Attempt: t.Attempt, Released: t.Released, Images: t.Images,
			Error: t.Error, ErrorCode: t.ErrorCode, LastError: t.LastError, Refunded: t.Refunded,
			CreatedAt: wire.Time(t.CreatedAt), UpdatedAt: wire.OptionalTime(t.UpdatedAt),
			StartedAt: wire.OptionalTime(t.StartedAt), FinishedAt: wire.OptionalTime(t.FinishedAt),
			ExpiresAt: wire.OptionalTime(t.ExpiresAt),
		},
		Ledger: make([]wire.LedgerEntry, len(d.Ledger)),
	}
	switch t.Status {
	case imagegen.StatusPending:
		out.Task.RunAfter = wire.OptionalTime(t.RunAfter)
	case imagegen.StatusProcessing:
		out.Task.LeaseUntil = wire.OptionalTime(t.LeaseUntil)
	}
	for i, e := range d.Ledger {
		out.Ledger[i] = wire.LedgerEntry{
			ID: e.ID, Kind: e.Kind, Amount: e.Amount, BalanceAfter: e.BalanceAfter,
			Reference: e.Reference(), CreatedAt: wire.Time(e.At),
		}
	}
	return out
}
