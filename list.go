package imagegen

import (
	"context"
	"errors"
	"fmt"
)

// Listing limits.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// ListTasks returns a page of owner's tasks, newest first: up to limit
// (0 means DefaultListLimit, at most MaxListLimit), only those with the
// given status unless it is "", after cursor (from the previous page's
// Next; "" for the first page).
func (s *Service) ListTasks(ctx context.Context, owner string, status Status, limit int, cursor string) (TaskPage, error) {
	if status != "" && !status.Valid() {
		return TaskPage{}, invalid("status", "must be one of pending, processing, success, failed")
	}
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return TaskPage{}, invalid("limit", "must be 1 to %d", MaxListLimit)
	}
	if len(cursor) > 256 {
		return TaskPage{}, invalid("cursor", "is not a cursor this server gave")
	}
	page, err := s.cfg.Store.ListTasks(ctx, owner, status, limit, cursor)
	if errors.Is(err, ErrInvalidParams) {
		return TaskPage{}, invalid("cursor", "is not a cursor this server gave")
	}
	if err != nil {
		return TaskPage{}, fmt.Errorf("imagegen: list tasks: %w", err)
	}
	return page, nil
}
