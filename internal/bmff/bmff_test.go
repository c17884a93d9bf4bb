package bmff

import "testing"

func TestImageType(t *testing.T) {
	box := func(brand string) []byte {
		return append([]byte{0, 0, 0, 0x18, 'f', 't', 'y', 'p'}, brand+"\x00\x00\x00\x00"...)
	}
	for _, c := range []struct {
		data []byte
		want string
	}{
		{box("avif"), "image/avif"},
		{box("avis"), "image/avif"},
		{box("heic"), "image/heic"},
		{box("hevx"), "image/heic"},
		{box("mif1"), "image/heif"},
		{box("msf1"), "image/heif"},
		{box("mp42"), ""},                      // a video
		{box("heic")[:11], ""},                 // cut short of its brand
		{[]byte("\x00\x00\x00\x18ftiphe"), ""}, // no ftyp box
		{nil, ""},
	} {
		if got := ImageType(c.data); got != c.want {
			t.Errorf("%q: %q, want %q", c.data, got, c.want)
		}
	}
}
