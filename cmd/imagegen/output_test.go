package main

import (
	"bytes"
	"image"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/matryer/is"
)

func TestOutputPath(t *testing.T) {
	for _, tc := range []struct {
		out     string
		i, n    int
		ext     string
		want    string
		comment string
	}{
		{"out.png", 0, 1, ".png", "out.png", "one image: -o as given"},
		{"out.png", 0, 1, ".jpg", "out.png", "-o wins over the type"},
		{"out.png", 0, 3, ".png", "out-1.png", "several: numbered"},
		{"out.png", 2, 3, ".png", "out-3.png", ""},
		{"dir/a.b/out", 1, 2, ".png", "dir/a.b/out-2", "no extension in -o"},
		{"", 0, 1, ".jpg", "task1.jpg", "default: the task id"},
		{"", 1, 2, ".png", "task1-2.png", ""},
	} {
		if got := outputPath(tc.out, "task1", tc.i, tc.n, tc.ext); got != tc.want {
			t.Errorf("outputPath(%q, %d, %d, %q) = %q, want %q (%s)", tc.out, tc.i, tc.n, tc.ext, got, tc.want, tc.comment)
		}
	}
}

func TestImageExt(t *testing.T) {
	is := is.New(t)
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	var p, j bytes.Buffer
	is.NoErr(png.Encode(&p, img))
	is.NoErr(jpeg.Encode(&j, img, nil))

	ext, err := imageExt(p.Bytes())
	is.NoErr(err)
	is.Equal(ext, ".png")
	ext, err = imageExt(j.Bytes())
	is.NoErr(err)
	is.Equal(ext, ".jpg")
	_, err = imageExt([]byte("<html><body>login</body></html>"))
	is.True(err != nil) // not an image: not written
	_, err = imageExt(nil)
	is.True(err != nil)
}

// Without -o the server's task id names the file and generate prints
// that name: an id with a C1 control character (U+009B is CSI, an escape
// sequence's start to a terminal that reads C1 controls) is refused as
// one with a C0 control is, where plainFileName took it and generate
// printed it raw (tableCell escapes it everywhere else).
func TestPlainFileNameRefusesControlCharacters(t *testing.T) {
	for _, id := range []string{"t\x1b[2J", "t\u009b2J", "t\u0085x", "t\x7f"} {
		if plainFileName(id) {
			t.Errorf("plainFileName(%q) = true, want false", id)
		}
	}
	if !plainFileName("3f0c9a4e-1d2b") {
		t.Error("plainFileName refuses a plain task id")
	}
}
