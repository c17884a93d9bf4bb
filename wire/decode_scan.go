package wire

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/imagegen/imagegen"
)

// scanner is a strict JSON reader over a body that is already known to be
// valid UTF-8. It reads only what DecodeRequest needs: white space,
// punctuation, strings and literals.
type scanner struct {
	data []byte
	pos  int
}

func (s *scanner) eof() bool { return s.pos >= len(s.data) }

func (s *scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) peek(c byte) bool { return s.pos < len(s.data) && s.data[s.pos] == c }

func (s *scanner) expect(c byte) error {
	if !s.peek(c) {
		return s.syntax("'" + string(c) + "'")
	}
	s.pos++
	return nil
}

func (s *scanner) literal(lit string) bool {
	if strings.HasPrefix(string(s.data[s.pos:min(len(s.data), s.pos+len(lit))]), lit) {
		s.pos += len(lit)
		return true
	}
	return false
}

func (s *scanner) syntax(want string) error {
	if s.eof() {
		return invalid("", "request body is truncated JSON (expected %s)", want)
	}
	return invalid("", "request body is not valid JSON: expected %s at offset %d", want, s.pos)
}

// str reads a JSON string and returns its value.
func (s *scanner) str() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start := s.pos
	// Fast path: no escapes.
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; {
		case c == '"':
			v := string(s.data[start:s.pos])
			s.pos++
			return v, nil
		case c == '\\':
			return s.escaped(start)
		case c < 0x20:
			return "", s.syntax("no control character in a string")
		}
		s.pos++
	}
	return "", s.syntax(`'"'`)
}

// knownStr is str for a value that is usually one of known (an
// enumeration, such as the scene): such a value is returned as the
// constant, not as a copy of the body's bytes, so that the tasks a store
// keeps share it.
func (s *scanner) knownStr(known []string) (string, error) {
	_, str, err := s.knownIndex(known)
	return str, err
}

// knownIndex is knownStr that also returns the index in known of the
// string it matched, or -1 (for any other string, or one written with
// escapes).
func (s *scanner) knownIndex(known []string) (int, string, error) {
	if s.peek('"') {
		if end := s.pos + 1 + bytes.IndexByte(s.data[s.pos+1:], '"'); end > s.pos {
			for i, k := range known {
				if string(s.data[s.pos+1:end]) == k {
					s.pos = end + 1
					return i, k, nil
				}
			}
		}
	}
	str, err := s.str()
	return -1, str, err
}

// The values knownStr keeps as constants.
var (
	scenes       = []string{string(imagegen.SceneTextToImage), string(imagegen.SceneImageToImage)}
	aspectRatios = aspectRatioStrings()
)

// aspectRatioStrings is auto and imagegen.AspectRatios, as strings.
func aspectRatioStrings() []string {
	out := []string{string(imagegen.AspectAuto)}
	for _, a := range imagegen.AspectRatios() {
		out = append(out, string(a))
	}
	return out
}

// escaped finishes a string that holds escape sequences.
func (s *scanner) escaped(start int) (string, error) {
	buf := make([]byte, 0, s.pos-start+16)
	buf = append(buf, s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return string(buf), nil
		case c < 0x20:
			return "", s.syntax("no control character in a string")
		case c != '\\':
			buf = append(buf, c)
			s.pos++
			continue
		}
		s.pos++
		if s.eof() {
			break
		}
		e := s.data[s.pos]
		s.pos++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", s.syntax("four hex digits after \\u")
			}
			if utf16.IsSurrogate(r) {
				r = s.lowSurrogate(r)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			s.pos--
			return "", s.syntax("a valid escape sequence")
		}
	}
	return "", s.syntax(`'"'`)
}

// lowSurrogate completes a UTF-16 pair; a lone surrogate becomes U+FFFD,
// as encoding/json does.
func (s *scanner) lowSurrogate(hi rune) rune {
	save := s.pos
	if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
		s.pos += 2
		if lo, ok := s.hex4(); ok {
			if r := utf16.DecodeRune(hi, lo); r != utf8.RuneError {
				return r
			}
		}
	}
	s.pos = save
	return utf8.RuneError
}

func (s *scanner) hex4() (rune, bool) {
	if s.pos+4 > len(s.data) {
		return 0, false
	}
	var r rune
	for _, c := range s.data[s.pos : s.pos+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	s.pos += 4
	return r, true
}

// number reads a JSON number (RFC 8259 §6) and reports whether it was
// one; a number with a fraction or an exponent is read but reported as
// false, so that the caller refuses it as not whole.
func (s *scanner) number() bool {
	if s.peek('-') {
		s.pos++
	}
	digits := s.digits()
	if digits == 0 || (digits > 1 && s.data[s.pos-digits] == '0') {
		return false
	}
	whole := true
	if s.peek('.') {
		s.pos++
		if s.digits() == 0 {
			return false
		}
		whole = false
	}
	if s.peek('e') || s.peek('E') {
		s.pos++
		if s.peek('+') || s.peek('-') {
			s.pos++
		}
		if s.digits() == 0 {
			return false
		}
		whole = false
	}
	return whole
}

func (s *scanner) digits() int {
	n := 0
	for s.pos < len(s.data) && '0' <= s.data[s.pos] && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}
