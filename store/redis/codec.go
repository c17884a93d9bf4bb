package redis

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
)

// liveHash reads the hash at key, a task's or an image's; one that is
// missing or past its retention is notFound. what names the read in
// errors.
func (s *Store) liveHash(ctx context.Context, key, what string, notFound error) (map[string]string, error) {
	f, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, wrapErr(what, err)
	}
	if len(f) == 0 || s.expired(atoi(f["expires"])) {
		return nil, notFound
	}
	return f, nil
}

// decodeTask reads a task hash (from HGETALL, as a map or a flat list).
// A field that does not decode is an error, returned with the task as
// far as it could be read (that field left zero): a listing shows it
// (listIndex), every other caller drops it.
func decodeTask(f map[string]string) (*imagegen.Task, error) {
	var errs []error
	t := &imagegen.Task{
		ID:        f["id"],
		Owner:     f["owner"],
		Model:     f["model"],
		Status:    imagegen.Status(f["status"]),
		Error:     f["error"],
		ErrorCode: imagegen.ErrorCode(f["error_code"]),
		LastError: f["last_error"],
		RequestID: f["rid"],
		Refunded:  f["refunded"] == "1",
	}
	if err := json.Unmarshal([]byte(f["req"]), &t.Request); err != nil {
		t.Request = imagegen.Request{}
		errs = append(errs, fmt.Errorf("redis store: task %s: request: %w", t.ID, err))
	}
	if v := f["seed"]; v != "" { // the seed the model used (CompleteTask)
		seed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("redis store: task %s: seed: %w", t.ID, err))
		} else {
			t.Request.Seed = &seed
		}
	}
	if imgs := f["images"]; imgs != "" {
		if err := json.Unmarshal([]byte(imgs), &t.Images); err != nil {
			t.Images = nil
			errs = append(errs, fmt.Errorf("redis store: task %s: images: %w", t.ID, err))
		}
	}
	t.Cost = atoi(f["cost"])
	t.Attempt = int(atoi(f["attempt"]))
	t.Released = int(atoi(f["released"]))
	t.LeaseUntil = msTime(f["lease_until"])
	t.RunAfter = msTime(cmp.Or(f["run_after"], f["created"]))
	t.CreatedAt = msTime(f["created"])
	t.StartedAt = msTime(f["started"])
	t.UpdatedAt = msTime(cmp.Or(f["updated"], f["created"])) // a new task has only "created"
	t.FinishedAt = msTime(f["finished"])
	t.ExpiresAt = msTime(f["expires"])
	if p := f["progress"]; p != "" {
		t.Progress, _ = strconv.ParseFloat(p, 64)
	}
	return t, errors.Join(errs...)
}

func atoi(s string) int64 {
	if s == "" { // a field not set: most times of a claimed task (ParseInt's error would be made for nothing)
		return 0
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// msTime reads a time stored as Unix milliseconds; 0 or "" is zero time.
func msTime(s string) time.Time { return fromMS(atoi(s)) }

func fromMS(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

// ledgerEntry is a ledger entry as stored (the owner is in the key).
type ledgerEntry struct {
	Kind   imagegen.LedgerKind `json:"kind"`
	Amount int64               `json:"amount"`
	Ref    string              `json:"ref"`
	At     int64               `json:"at"`
	// Bal is the balance after the entry. Entries written before it was
	// recorded lack it; readers then add up the entries before them.
	Bal *int64 `json:"bal,omitempty"`
}
