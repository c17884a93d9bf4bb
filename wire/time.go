package wire

import "time"

// Time is t as every body shows it: in UTC, to the millisecond
// ("2026-11-23T16:11:35.783Z"), whatever precision the store kept, so the
// same task reads the same from every backend and in every view.
func Time(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// OptionalTime is Time(t), or nil when t is zero (not happened yet), for
// the fields a body leaves out until then.
func OptionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	at := Time(t)
	return &at
}
