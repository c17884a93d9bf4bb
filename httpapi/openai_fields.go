package httpapi

import (
	"bytes"
	"encoding/json"
	"slices"
)

// isJSONObject reports whether body, valid JSON, is an object.
func isJSONObject(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// firstUnknownField returns the first top-level field of body, a valid
// JSON object, that is not one of openAIAcceptedFields, in the order
// the body has them. It stops there: a body of many unknown fields costs
// no string or map entry for each (a map of all the fields made some
// 100,000 allocations and 18 MiB of garbage of a 1 MiB body before its
// first unknown field was refused).
func firstUnknownField(body []byte) (name string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // the '{'
		return "", false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		name, _ := tok.(string)
		if !slices.Contains(openAIAcceptedFields, name) {
			return name, true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}
