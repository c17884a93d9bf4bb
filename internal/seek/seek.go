// Package seek has the arithmetic of io.Seeker shared by the blob
// readers that fetch ranges on demand.
package seek

import (
	"errors"
	"io"
)

// Abs returns the absolute position that Seek(offset, whence) asks for,
// from pos in a body of size bytes.
func Abs(pos, size, offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = pos + offset
	case io.SeekEnd:
		abs = size + offset
	default:
		return pos, errors.New("seek: invalid whence")
	}
	if abs < 0 {
		return pos, errors.New("seek: position before the start")
	}
	return abs, nil
}
