package placeholder

import (
	"bytes"
	"image"
	"image/png"
)

// encodePNG encodes img for speed rather than size: the picture is a
// placeholder, and a 1024x1024 one must take milliseconds.
func encodePNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
