package provider_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"runtime"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// png16Claiming returns a few hundred bytes of 16-bit RGBA PNG whose
// header says it is w×h, with the start of a zlib stream and no more:
// image/png allocates the whole image (8 bytes a pixel) before it finds
// the data short.
func png16Claiming(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(kind string, data []byte) {
		_ = binary.Write(&buf, binary.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		c.Write([]byte(kind))
		c.Write(data)
		buf.WriteString(kind)
		buf.Write(data)
		_ = binary.Write(&buf, binary.BigEndian, c.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 16, 6 // 16 bits, RGBA
	chunk("IHDR", ihdr)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(make([]byte, 1024))
	_ = zw.Close()
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	return buf.Bytes()
}

// A provider's answer is decoded for a crop under a bound of the memory
// it takes, not its pixels alone: a hostile or broken server's few
// hundred bytes of 16-bit PNG that claims 100 million pixels (within
// MaxCropPixels) would take 800 MB before image/png found the data short.
func TestCropRefusesAnswerThatDecodesTooLarge(t *testing.T) {
	is := is.New(t)
	data := png16Claiming(t, 10_000, 10_000)
	s, err := provider.ImageSize(data)
	is.NoErr(err)
	is.Equal(s, provider.Size{W: 10_000, H: 10_000}) // the header reads as asked
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, changed, err := provider.CropToRatio(imagegen.GeneratedImage{ContentType: "image/png", Data: data}, imagegen.Aspect16x9)
	runtime.ReadMemStats(&after)
	is.True(err != nil) // not an image it may decode
	is.True(!changed)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MB", allocated>>20)
	is.True(allocated < 64<<20) // no decoding of the claimed size (was 800 MB)
}
