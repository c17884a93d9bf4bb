package placeholder_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/placeholder"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// png16 is a w x h 16-bit RGBA PNG (8 bytes a pixel once decoded), all
// zero: a few kilobytes on the wire however large it is.
func png16(t testing.TB, w, h int) []byte {
	t.Helper()
	chunk := func(b *bytes.Buffer, typ string, data []byte) {
		_ = binary.Write(b, binary.BigEndian, uint32(len(data)))
		body := append([]byte(typ), data...)
		b.Write(body)
		_ = binary.Write(b, binary.BigEndian, crc32.ChecksumIEEE(body))
	}
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	ihdr = append(ihdr, 16, 6, 0, 0, 0) // 16-bit RGBA, no interlace
	chunk(&out, "IHDR", ihdr)
	var idat bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&idat, zlib.BestSpeed)
	row := make([]byte, 1+8*w) // filter byte 0, then zero pixels
	for range h {
		if _, err := zw.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	chunk(&out, "IDAT", idat.Bytes())
	chunk(&out, "IEND", nil)
	return out.Bytes()
}

// worstReferences serves the worst reference set the limits accept:
// eight 16-bit PNGs at the largest size fetcher cfg lets through.
func worstReferences(t testing.TB, cfg fetch.Config) (*fetch.Fetcher, []string, int) {
	t.Helper()
	f, err := fetch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	side := 1
	for int64(side+1)*int64(side+1)*8 <= cfg.MaxDecodedBytes {
		side++
	}
	data := png16(t, side, side)
	if _, _, err := f.DecodeConfig(data); err != nil {
		t.Fatalf("the worst accepted image is refused: %v", err)
	}
	if _, _, err := f.DecodeConfig(png16(t, side+1, side+1)); err == nil {
		t.Fatal("a larger image is accepted: this is not the worst one")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	urls := make([]string, imagegen.MaxImageInputs)
	for i := range urls {
		urls[i] = srv.URL + "/" + string(rune('a'+i)) + ".png"
	}
	return f, urls, side
}

// peakHeap runs fn while sampling the heap's object bytes, with the GC
// made eager (GOGC=10) so the figure follows live memory rather than
// garbage, and returns the highest sample above the starting heap.
func peakHeap(fn func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var (
		peak uint64
		wg   sync.WaitGroup
	)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			peak = max(peak, read())
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	peak = max(peak, read())
	if peak < base {
		return 0
	}
	return peak - base
}

// TestWorstReferenceSetMemory: eight 16-bit PNGs at the largest size the
// fetcher accepts are decoded one at a time, each let go before the next
// is decoded, so a task holds one decoded image, not eight. It checks
// which decoded images are still reachable (weak pointers, after a full
// GC) each time the model decodes the next one: deterministic, however
// loaded the machine. BenchmarkWorstReferenceSet reports what that is
// worth in peak heap at the default limits.
func TestWorstReferenceSetMemory(t *testing.T) {
	is := is.New(t)
	const decoded = 2 << 20 // scaled down: the order of decoding, not the size, is checked
	f, urls, side := worstReferences(t, fetch.Config{AllowPrivate: true, MaxDecodedBytes: decoded})
	live := &liveDecodes{ReferenceFetcher: f}
	m, err := placeholder.New(placeholder.Config{LongSide: 64, Fetcher: live})
	is.NoErr(err)
	_, err = m.Generate(t.Context(), imagegen.Generation{Request: providertest.I2I("x", imagegen.AspectAuto, urls...)})
	is.NoErr(err)
	t.Logf("eight %dx%d 16-bit PNGs: %d decoded, at most %d earlier one(s) reachable at a decode", side, side, len(live.decoded), live.maxLive)
	is.Equal(len(live.decoded), len(urls)) // each reference decoded once
	is.Equal(live.maxLive, 0)              // none still held when the next is decoded
}

// liveDecodes is a ReferenceFetcher that, before each Decode, collects
// garbage and counts the images it decoded earlier that are still
// reachable (maxLive: the most seen at once).
type liveDecodes struct {
	placeholder.ReferenceFetcher
	mu      sync.Mutex
	decoded []weak.Pointer[uint8] // the first byte of the pixels of each decoded image
	maxLive int
}

func (l *liveDecodes) Decode(data []byte) (image.Image, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	runtime.GC() // a full cycle: unreachable pixels' weak pointers are cleared
	live := 0
	for _, w := range l.decoded {
		if w.Value() != nil {
			live++
		}
	}
	l.maxLive = max(l.maxLive, live)
	img, format, err := l.ReferenceFetcher.Decode(data)
	if err != nil {
		return img, format, err
	}
	pix, ok := img.(*image.NRGBA64)
	if !ok {
		return nil, "", fmt.Errorf("liveDecodes: decoded a %T, want *image.NRGBA64", img)
	}
	// The pixel array is the decoded image's memory; a weak pointer to
	// its start keeps it no more reachable than it is.
	l.decoded = append(l.decoded, weak.Make(&pix.Pix[0]))
	return img, format, nil
}

// BenchmarkWorstReferenceSet generates with the worst reference set the
// default limits accept (eight 16-bit PNGs of 20 million pixels, 160 MB
// each once decoded) and reports the peak heap.
func BenchmarkWorstReferenceSet(b *testing.B) {
	f, urls, _ := worstReferences(b, fetch.Config{AllowPrivate: true, MaxDecodedBytes: 160_000_000})
	m, err := placeholder.New(placeholder.Config{Fetcher: f})
	if err != nil {
		b.Fatal(err)
	}
	var peak uint64
	for b.Loop() {
		peak = max(peak, peakHeap(func() {
			if _, err := m.Generate(b.Context(), imagegen.Generation{Request: providertest.I2I("x", imagegen.AspectAuto, urls...)}); err != nil {
				b.Fatal(err)
			}
		}))
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}
