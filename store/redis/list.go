package redis

import (
	"context"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
)

// ListTasks returns a page of owner's tasks, newest first. The owner's
// index holds "<created>:<id>" members; the cursor is the last member
// returned. Entries of expired tasks are dropped as they are met.
func (s *Store) ListTasks(ctx context.Context, owner string, status imagegen.Status, limit int, cursor string) (imagegen.TaskPage, error) {
	index := s.k.ownerTasks(owner)
	maxLex := "+"
	if cursor != "" {
		if strings.ContainsAny(cursor, "[(") || !strings.Contains(cursor, ":") {
			return imagegen.TaskPage{}, fmt.Errorf("redis store: bad cursor: %w", imagegen.ErrInvalidParams)
		}
		maxLex = "(" + cursor
	}
	var page imagegen.TaskPage
	var last string // index member of the page's last task
	batch := int64(limit + 1)
	for range 20 { // bounded: a filter that matches little ends early
		members, err := s.rdb.ZRevRangeByLex(ctx, index, &goredis.ZRangeBy{Max: maxLex, Min: "-", Count: batch}).Result()
		if err != nil {
			return page, wrapErr("list tasks", err)
		}
		if len(members) == 0 {
			return page, nil
		}
		pipe := s.rdb.Pipeline()
		cmds := make([]*goredis.MapStringStringCmd, len(members))
		for i, m := range members {
			_, id, _ := strings.Cut(m, ":")
			cmds[i] = pipe.HGetAll(ctx, s.k.task(id))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return page, wrapErr("list tasks", err)
		}
		var gone []any
		for i, m := range members {
			f := cmds[i].Val()
			if len(f) == 0 || f["owner"] != owner || s.expired(atoi(f["expires"])) {
				if len(f) == 0 {
					gone = append(gone, m)
				}
				continue
			}
			if status != "" && imagegen.Status(f["status"]) != status {
				continue
			}
			if len(page.Tasks) == limit {
				page.Next = last // there is more after it
				break
			}
			t, err := decodeTask(f)
			if err != nil {
				return page, err
			}
			page.Tasks = append(page.Tasks, t)
			last = m
		}
		if len(gone) > 0 {
			_ = s.rdb.ZRem(ctx, index, gone...).Err() // best effort
		}
		if page.Next != "" || int64(len(members)) < batch {
			return page, nil
		}
		maxLex = "(" + members[len(members)-1]
	}
	// Scanned as far as one call may: the next page carries on from here
	// (it may be short, or even empty, when the filter matches little).
	page.Next = strings.TrimPrefix(maxLex, "(")
	return page, nil
}
