package main

import (
	"errors"
	"io"
)

// defaultMaxDownloadBytes is -max-download-bytes's default: the most
// bytes of images one generate run writes, across all of them.
const defaultMaxDownloadBytes = 256 << 20

// errOverDownloadBudget is the error of a write past a downloadBudget.
var errOverDownloadBudget = errors.New("more image bytes than -max-download-bytes allows")

// downloadBudget bounds the bytes one run writes across all its images
// (each is also bounded by the client's own per-image limit), so that a
// broken or hostile server cannot fill the user's disk. A zero or
// negative limit is no bound.
type downloadBudget struct {
	limit   int64
	written int64
}

// writer is w, whose writes count against b: one that would go past
// the limit writes nothing and fails with errOverDownloadBudget.
func (b *downloadBudget) writer(w io.Writer) io.Writer {
	return budgetWriter{b: b, w: w}
}

type budgetWriter struct {
	b *downloadBudget
	w io.Writer
}

func (bw budgetWriter) Write(p []byte) (int, error) {
	if bw.b.limit > 0 && int64(len(p)) > bw.b.limit-bw.b.written {
		return 0, errOverDownloadBudget
	}
	n, err := bw.w.Write(p)
	bw.b.written += int64(n)
	return n, err
}
