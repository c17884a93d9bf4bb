package redis

import (
	"encoding/json"
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
