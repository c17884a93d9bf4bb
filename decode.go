package imagegen

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// DecodeRequest parses a submit body strictly and validates it. Anything
// but one JSON object with the exact (case-sensitive) field names of
// INTERFACE.md §2.1, each at most once and of the right type, followed by
// nothing but white space, is a *ValidationError naming the field.
// The returned request is normalised (aspect_ratio defaults to auto).
func DecodeRequest(body []byte) (Request, error) {
	var req Request
	if !utf8.Valid(body) {
		return req, invalid("", "request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return req, bodyError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return req, invalid("", "request body must be a JSON object")
	}
	seen := make(map[string]bool, 4)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return req, bodyError(err)
		}
		name, _ := tok.(string) // object keys are always strings
		if seen[name] {
			return req, invalid(name, "appears more than once")
		}
		seen[name] = true
		var target any
		switch name {
		case "scene":
			target = &req.Scene
		case "prompt":
			target = &req.Prompt
		case "aspect_ratio":
			target = &req.AspectRatio
		case "image_input":
			target = &req.ImageInput
		default:
			return req, unknownField(name)
		}
		if err := decodeValue(dec, name, target); err != nil {
			return req, err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return req, bodyError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, invalid("", "request body has data after the JSON object")
	}
	if seen["image_input"] && req.ImageInput == nil {
		req.ImageInput = []string{} // explicit null or [] is present, and refused below
	}
	if err := req.Validate(); err != nil {
		return req, err
	}
	req.Normalize()
	return req, nil
}

func decodeValue(dec *json.Decoder, name string, target any) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return bodyError(err)
	}
	if bytes.Equal(raw, []byte("null")) {
		if name == "image_input" {
			return nil
		}
		return invalid(name, "must be a string, not null")
	}
	if err := json.Unmarshal(raw, target); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if name == "image_input" {
				return invalid(name, "must be an array of strings")
			}
			return invalid(name, "must be a string")
		}
		return invalid(name, "is malformed")
	}
	if name == "image_input" {
		for _, elem := range rawArray(raw) {
			if bytes.Equal(elem, []byte("null")) {
				return invalid(name, "must be an array of strings")
			}
		}
	}
	return nil
}

// rawArray splits a JSON array into its elements' raw text.
func rawArray(raw json.RawMessage) []json.RawMessage {
	var elems []json.RawMessage
	_ = json.Unmarshal(raw, &elems) // raw already decoded as []string
	return elems
}

func unknownField(name string) error {
	for _, known := range []string{"scene", "prompt", "aspect_ratio", "image_input"} {
		if strings.EqualFold(name, known) {
			return invalid(name, "unknown field (did you mean %q? field names are case-sensitive)", known)
		}
	}
	return invalid(name, "unknown field")
}

func bodyError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return invalid("", "request body is empty or truncated JSON")
	}
	return invalid("", "request body is not valid JSON: %v", err)
}
