package redis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// ListTasks returns a page of owner's tasks, newest first. The owner's
// index holds "<created>:<id>" members; the cursor is the last member
// returned. Entries of expired tasks are dropped as they are met. A task
// whose stored fields do not decode is listed with what could be read
// (id, owner, status, failure, times; an unreadable request left zero),
// neither failing the page nor left out of it.
func (s *Store) ListTasks(ctx context.Context, owner string, status imagegen.Status, limit int, cursor string) (imagegen.TaskPage, error) {
	sh := s.byOwner(owner)
	return s.listIndex(ctx, sh.ownerTasks(owner), imagegen.TaskFilter{Owner: owner, Status: status}, limit, cursor)
}

// ListAllTasks returns a page of every owner's tasks (or f.Owner's),
// newest first, from the index of all tasks (or the owner's). A store of
// several shards reads a page from each shard's index and merges them.
func (s *Store) ListAllTasks(ctx context.Context, f imagegen.TaskFilter, limit int, cursor string) (imagegen.TaskPage, error) {
	if f.Owner != "" {
		sh := s.byOwner(f.Owner)
		return s.listIndex(ctx, sh.ownerTasks(f.Owner), f, limit, cursor)
	}
	if !s.sharded {
		return s.listIndex(ctx, s.shards[0].allTasks(), f, limit, cursor)
	}
	var (
		all   []*imagegen.Task
		bound string // the newest member where a shard's page stopped short of its index's end
	)
	for _, sh := range s.shards {
		page, err := s.listIndex(ctx, sh.allTasks(), f, limit, cursor)
		if err != nil {
			return imagegen.TaskPage{}, err
		}
		all = append(all, page.Tasks...)
		if page.Next != "" && page.Next > bound {
			bound = page.Next
		}
	}
	member := func(t *imagegen.Task) string { return msMember(t.CreatedAt) + ":" + t.ID }
	slices.SortFunc(all, func(a, b *imagegen.Task) int { return strings.Compare(member(b), member(a)) })
	var out imagegen.TaskPage
	cut := false
	for _, t := range all {
		// Below a shard's bound that shard may hold tasks not read yet;
		// past the limit the page is full: the next page goes on from
		// the last task of this one.
		if (bound != "" && member(t) < bound) || len(out.Tasks) == limit {
			cut = true
			break
		}
		out.Tasks = append(out.Tasks, t)
	}
	switch {
	case len(out.Tasks) > 0 && (cut || bound != ""):
		out.Next = member(out.Tasks[len(out.Tasks)-1])
	case bound != "":
		out.Next = bound
	}
	return out, nil
}

// listIndex pages through an index of "<created ms, 13 digits>:<id>"
// members, newest first, keeping the tasks that match f. f.Since and
// f.Until narrow the range read; the cursor is the last member returned.
func (s *Store) listIndex(ctx context.Context, index string, f imagegen.TaskFilter, limit int, cursor string) (imagegen.TaskPage, error) {
	maxLex, minLex := "+", "-"
	if !f.Until.IsZero() {
		maxLex = "(" + msMember(f.Until)
	}
	if !f.Since.IsZero() {
		minLex = "[" + msMember(f.Since)
	}
	if cursor != "" {
		if strings.ContainsAny(cursor, "[(") || !strings.Contains(cursor, ":") {
			return imagegen.TaskPage{}, fmt.Errorf("redis store: bad cursor: %w", imagegen.ErrInvalidParams)
		}
		if maxLex == "+" || "("+cursor < maxLex {
			maxLex = "(" + cursor
		}
	}
	var page imagegen.TaskPage
	var last string // index member of the page's last task
	batch := int64(limit + 1)
	for range storekit.ListScanPages { // bounded (storekit.ListScan): a filter that matches little ends early
		members, err := s.rdb.ZRevRangeByLex(ctx, index, &goredis.ZRangeBy{Max: maxLex, Min: minLex, Count: batch}).Result()
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
			cmds[i] = pipe.HGetAll(ctx, s.byID(id).task(id)) // shard 0 for a task moved from a single node (MigrateToShards)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return page, wrapErr("list tasks", err)
		}
		var gone []any
		for i, m := range members {
			h := cmds[i].Val()
			if len(h) == 0 || (f.Owner != "" && h["owner"] != f.Owner) || s.expired(atoi(h["expires"])) {
				if len(h) == 0 {
					gone = append(gone, m)
				}
				continue
			}
			if f.Status != "" && imagegen.Status(h["status"]) != f.Status {
				continue
			}
			if len(page.Tasks) == limit {
				page.Next = last // there is more after it
				break
			}
			// A task that does not decode is listed as far as it could
			// be read (its id, status and failure; its request zero),
			// not an error for the whole page: the owner can page past
			// it and sees it failed once a claim has failed it.
			t, _ := decodeTask(h)
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

// msMember is the time part of an index member: Unix ms in 13 digits.
func msMember(t time.Time) string { return fmt.Sprintf("%013d", max(t.UnixMilli(), 0)) }
