package redis

import (
	"encoding/json"
	"strings"
	"testing"
)

// stringsJSON writes what json.Marshal writes, escaped strings included.
func TestStringsJSONIsJSONMarshal(t *testing.T) {
	for _, list := range [][]string{nil, {}, {"a"}, {"img-1", "img-2"}, {"q\"uote", "back\\slash"}, {"tab\t", "é", "<html>"}, {"a&b"}, {"x>y"}} {
		want, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		got, err := stringsJSON(list)
		if err != nil || string(got) != string(want) {
			t.Errorf("stringsJSON(%q) = %s, %v; want %s", list, got, err, want)
		}
	}
}

// writeJSONString writes what json.Marshal writes of one string, with
// the same strings stringsJSON writes by hand or hands over.
func TestWriteJSONStringIsJSONMarshal(t *testing.T) {
	for _, s := range []string{"", "img-1", "q\"uote", "back\\slash", "tab\t", "é", "<html>", "a&b", "x>y"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		writeJSONString(&b, s)
		if b.String() != string(want) {
			t.Errorf("writeJSONString(%q) = %s; want %s", s, b.String(), want)
		}
	}
}
