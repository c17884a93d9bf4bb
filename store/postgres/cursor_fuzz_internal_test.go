package postgres

import (
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/imagegen/imagegen"
)

// FuzzBelowCursor checks how the PostgreSQL store reads a task-list
// cursor a client sent back (belowCursor), with no database: it never
// panics; a cursor it refuses is refused with an error wrapping
// imagegen.ErrInvalidParams (a 4xx, never a 5xx); what it accepts is a
// sequence number above 0 (the first page, "", reads below every task);
// and every cursor the store gives (a seq in decimal) reads back as it.
func FuzzBelowCursor(f *testing.F) {
	for _, c := range []string{"", "1", "42", "0", "-1", "+7", "007", " 1", "9223372036854775807", "9223372036854775808", "0x10", "1_000", "١"} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		n, err := belowCursor(cursor)
		switch {
		case err != nil:
			if !errors.Is(err, imagegen.ErrInvalidParams) {
				t.Fatalf("belowCursor(%q): %v, not ErrInvalidParams", cursor, err)
			}
		case cursor == "" && n != math.MaxInt64, cursor != "" && n <= 0:
			t.Fatalf("belowCursor(%q) = %d", cursor, n)
		case cursor != "":
			if again, err := belowCursor(strconv.FormatInt(n, 10)); err != nil || again != n {
				t.Fatalf("belowCursor(%q) = %d, but its own spelling reads as %d, %v", cursor, n, again, err)
			}
		}
	})
}
