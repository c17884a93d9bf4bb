package wire

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/suggest"
)

// DecodeRequest parses a submit body strictly. Anything but one JSON
// object with the exact (case-sensitive) field names of docs/api.md,
// "Submit a task", each at most once and of the right type, followed by
// nothing but white space, is a *ValidationError naming the field. The
// returned request is normalised (aspect_ratio defaults to auto) but not
// validated: Service.Submit checks the interface's rules, once.
//
// The body has one fixed shape, so it is read by a small strict scanner
// (decode_scan.go) rather than by encoding/json, which matches field names
// case-insensitively, lets a repeated key win silently, and allocates
// several times more on this hot path. FuzzDecodeRequest checks that the
// two agree on every body that decodes.
func DecodeRequest(body []byte) (imagegen.Request, error) {
	var req imagegen.Request
	if !utf8.Valid(body) {
		return req, invalid("", "request body is not valid UTF-8")
	}
	s := scanner{data: body}
	if err := s.object(&req); err != nil {
		return req, err
	}
	req.Normalize()
	return req, nil
}

// object reads the whole body: one object, then only white space.
func (s *scanner) object(req *imagegen.Request) error {
	s.space()
	if s.eof() {
		return invalid("", "request body is empty")
	}
	if s.data[s.pos] != '{' {
		return invalid("", "request body must be a JSON object")
	}
	s.pos++
	var seen [len(fieldNames)]bool
	for first := true; ; first = false {
		s.space()
		if s.peek('}') && first {
			s.pos++
			break
		}
		i, name, err := s.knownIndex(fieldNames[:]) // the constant: no copy of a known name
		if err != nil {
			return err
		}
		s.space()
		if err := s.expect(':'); err != nil {
			return err
		}
		s.space()
		if i < 0 {
			i = fieldIndex(name) // a name written with escapes
		}
		switch {
		case i < 0:
			return unknownField(name)
		case seen[i]:
			return invalid(name, "appears more than once")
		}
		seen[i] = true
		if err := s.field(req, name); err != nil {
			return err
		}
		s.space()
		if s.peek(',') {
			s.pos++
			continue
		}
		if err := s.expect('}'); err != nil {
			return err
		}
		break
	}
	s.space()
	if !s.eof() {
		return invalid("", "request body has data after the JSON object")
	}
	return nil
}

var fieldNames = [...]string{"scene", "prompt", "aspect_ratio", "image_input", "callback_url", "seed", "callback_events"}

func fieldIndex(name string) int {
	for i, f := range fieldNames {
		if f == name {
			return i
		}
	}
	return -1
}

// field reads the value of one known field into req.
func (s *scanner) field(req *imagegen.Request, name string) error {
	switch name {
	case "image_input":
		list, err := s.stringArray(name)
		req.ImageInput = list
		return err
	case "callback_events":
		list, err := s.stringArray(name)
		if list != nil {
			req.CallbackEvents = make([]imagegen.CallbackEvent, len(list))
			for i, e := range list {
				req.CallbackEvents[i] = imagegen.CallbackEvent(e)
			}
		}
		return err
	case "seed":
		return s.seed(req)
	}
	if !s.peek('"') {
		if s.literal("null") {
			return invalid(name, "must be a string, not null")
		}
		return s.wrongType(name, "must be a string")
	}
	var v string
	var err error
	switch name {
	case "scene":
		v, err = s.knownStr(scenes)
	case "aspect_ratio":
		v, err = s.knownStr(aspectRatios)
	default:
		v, err = s.str()
	}
	if err != nil {
		return err
	}
	switch name {
	case "scene":
		req.Scene = imagegen.Scene(v)
	case "prompt":
		req.Prompt = v
	case "callback_url":
		req.CallbackURL = v
	default:
		req.AspectRatio = imagegen.AspectRatio(v)
	}
	return nil
}

// stringArray reads an array of strings, or null (present but empty,
// refused by Validate with a clear message).
func (s *scanner) stringArray(name string) ([]string, error) {
	list := []string{}
	if s.literal("null") {
		return list, nil
	}
	if !s.peek('[') {
		return nil, s.wrongType(name, "must be an array of strings")
	}
	s.pos++
	s.space()
	if s.peek(']') {
		s.pos++
		return list, nil
	}
	for {
		s.space()
		if !s.peek('"') {
			return nil, s.wrongType(name, "must be an array of strings")
		}
		v, err := s.str()
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		s.space()
		if s.peek(',') {
			s.pos++
			continue
		}
		return list, s.expect(']')
	}
}

// seed reads the seed: a JSON number that must be a whole number in
// range (checked by Validate); a fraction or exponent is refused.
func (s *scanner) seed(req *imagegen.Request) error {
	start := s.pos
	if !s.number() {
		s.pos = start
		if s.literal("null") {
			return invalid("seed", "must be a whole number, not null")
		}
		return s.wrongType("seed", "must be a whole number")
	}
	n, err := strconv.ParseInt(string(s.data[start:s.pos]), 10, 64)
	if err != nil {
		return invalid("seed", "must be a whole number from 0 to %d", int64(imagegen.MaxSeed))
	}
	req.Seed = &n
	return nil
}

// wrongType reports a value of the wrong JSON type, or malformed JSON if
// what is there is no JSON value at all.
func (s *scanner) wrongType(name, msg string) error {
	if s.eof() || !strings.ContainsRune(`"-0123456789tfn[{`, rune(s.data[s.pos])) {
		return s.syntax("a value")
	}
	return invalid(name, "%s", msg)
}

func unknownField(name string) error {
	if name == "" {
		return invalid(`""`, "unknown field (an empty name)")
	}
	if known := suggest.Nearest(name, fieldNames[:]); known != "" {
		return invalid(name, "unknown field (did you mean %q?)", known)
	}
	return invalid(name, "unknown field (the fields are %s)", strings.Join(fieldNames[:], ", "))
}

// invalid is a refusal of the body, naming the field ("" for the body as
// a whole).
func invalid(field, format string, args ...any) *imagegen.ValidationError {
	return &imagegen.ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}
