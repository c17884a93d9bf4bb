package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode"
)

// printJSON writes v to w as indented JSON, with & < > as they are (image
// URLs keep their &), and with the control characters at and above DEL
// (U+007F, and the C1 set U+0080 to U+009F, which some terminals read as
// the start of an escape sequence) written as \u escapes, as the encoder
// already writes those below U+0020: what a server sent cannot drive the
// terminal, and the JSON reads back the same.
func printJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	out := buf.Bytes()
	if bytes.ContainsFunc(out, highControl) {
		var esc bytes.Buffer
		for _, r := range string(out) { // the encoder's output is valid UTF-8
			if highControl(r) {
				fmt.Fprintf(&esc, `\u%04x`, r)
			} else {
				esc.WriteRune(r)
			}
		}
		out = esc.Bytes()
	}
	_, err := w.Write(out)
	return err
}

// highControl reports whether r is a control character the JSON encoder
// leaves as it is: DEL and the C1 set.
func highControl(r rune) bool { return r >= 0x7f && unicode.IsControl(r) }
