package provider

import (
	"bytes"
	"strings"
	"testing"
)

// An answer of a known length is read into one buffer of that size; one
// whose length is unknown or wrong is still read whole, up to the limit.
func TestReadAnswer(t *testing.T) {
	body := strings.Repeat("x", 100_000)
	for _, c := range []struct {
		name          string
		contentLength int64
		limit         int64
		want          int
		exactBuffer   bool
	}{
		{"known length", 100_000, 1 << 20, 100_000, true},
		{"unknown length", -1, 1 << 20, 100_000, false},
		{"declared shorter", 10, 1 << 20, 100_000, false},
		{"over the limit", 100_000, 1000, 1001, false},
	} {
		got, err := readAnswer(strings.NewReader(body), c.contentLength, c.limit)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != c.want || !bytes.Equal(got, []byte(body[:c.want])) {
			t.Errorf("%s: read %d bytes, want the first %d", c.name, len(got), c.want)
		}
		if c.exactBuffer && cap(got) != int(c.contentLength)+bytes.MinRead {
			t.Errorf("%s: buffer of %d bytes for an answer of %d: it grew", c.name, cap(got), c.contentLength)
		}
	}
}
