package providertest

import (
	"encoding/json"
	"testing"
)

// Must fails the test at once if err is not nil.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// JSON decodes a JSON document into maps, slices and plain values, for
// comparing documents whatever their spacing and key order; it fails
// the test if data is not JSON.
func JSON(t testing.TB, data []byte) any {
	t.Helper()
	var v any
	Must(t, json.Unmarshal(data, &v))
	return v
}

// EditJSON returns the JSON object body (a documented example, most
// often) after edit has changed its decoded form; it fails the test if
// body is not a JSON object.
func EditJSON(t testing.TB, body []byte, edit func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	Must(t, json.Unmarshal(body, &doc))
	edit(doc)
	out, err := json.Marshal(doc)
	Must(t, err)
	return out
}
