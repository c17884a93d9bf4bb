package httpapi

import (
	"strconv"
	"unicode/utf8"

	"github.com/imagegen/imagegen/wire"
)

// appendFast appends the JSON of the two answers of the hot paths (a
// poll's task without details, a submit's answer) as encode's encoder
// writes them, byte for byte, without reflection; ok is false for any
// other value, or when a string needs escaping (encoding/json then
// writes it).
func appendFast(b []byte, v any) (_ []byte, ok bool) {
	switch v := v.(type) {
	case *wire.TaskBody:
		return appendTaskBody(b, v)
	case *wire.Submitted:
		return appendSubmitted(b, v)
	}
	return b, false
}

func appendTaskBody(b []byte, t *wire.TaskBody) ([]byte, bool) {
	if t.TaskDetails != nil {
		return b, false
	}
	ok := true
	b = append(b, `{"task_id":`...)
	b, ok = appendPlainString(b, t.TaskID, ok)
	b = append(b, `,"status":`...)
	b, ok = appendPlainString(b, string(t.Status), ok)
	if len(t.Images) > 0 {
		b = append(b, `,"images":[`...)
		for i, u := range t.Images {
			if i > 0 {
				b = append(b, ',')
			}
			b, ok = appendPlainString(b, u, ok)
		}
		b = append(b, ']')
	}
	if t.Error != "" {
		b = append(b, `,"error":`...)
		b, ok = appendPlainString(b, t.Error, ok)
	}
	if t.ErrorCode != "" {
		b = append(b, `,"error_code":`...)
		b, ok = appendPlainString(b, string(t.ErrorCode), ok)
	}
	return append(b, "}\n"...), ok
}

func appendSubmitted(b []byte, s *wire.Submitted) ([]byte, bool) {
	ok := true
	b = append(b, `{"task_id":`...)
	b, ok = appendPlainString(b, s.TaskID, ok)
	b = append(b, `,"status":`...)
	b, ok = appendPlainString(b, string(s.Status), ok)
	b = append(b, `,"credits_used":`...)
	b = strconv.AppendInt(b, s.CreditsUsed, 10)
	b = append(b, `,"credits_remaining":`...)
	b = strconv.AppendInt(b, s.CreditsRemaining, 10)
	return append(b, "}\n"...), ok
}

// appendPlainString appends s quoted when no byte of it needs escaping
// (printable ASCII but '"' and '\\'), and reports ok && that.
func appendPlainString(b []byte, s string, ok bool) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), ok
}
