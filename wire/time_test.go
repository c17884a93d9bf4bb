package wire_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/imagegen/imagegen/wire"
)

func TestTimeIsUTCToTheMillisecond(t *testing.T) {
	at := time.Date(2026, 11, 23, 17, 11, 35, 783_456_789, time.FixedZone("CET", 3600))
	b, err := json.Marshal(wire.Time(at))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `"2026-11-23T16:11:35.783Z"` {
		t.Errorf("got %s", b)
	}
	if wire.OptionalTime(time.Time{}) != nil {
		t.Error("a zero time is not left out")
	}
	if p := wire.OptionalTime(at); p == nil || !p.Equal(wire.Time(at)) {
		t.Errorf("OptionalTime = %v", p)
	}
}
