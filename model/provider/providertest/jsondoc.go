package providertest

import (
	"encoding/json"
	"testing"
)

// Must fails the test at once if err is not nil (on the test's
// goroutine only).
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
// often) after edit has changed its decoded form. If body is not a JSON
// object it fails the test with t.Errorf, safe in a fake's handler, and
// returns nil.
func EditJSON(t testing.TB, body []byte, edit func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Errorf("editing a JSON example: %v", err)
		return nil
	}
	edit(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Errorf("editing a JSON example: %v", err)
		return nil
	}
	return out
}
