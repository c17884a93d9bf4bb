package imagegen_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// The first bytes of images of the types the service keeps but that
// TinyPNG is not: enough for their signatures.
var (
	webpBytes = []byte("RIFF\x1a\x00\x00\x00WEBPVP8 \x0e\x00\x00\x00\x30\x01\x00\x9d\x01\x2a\x01\x00\x01\x00")
	// An ISO BMFF ftyp box of major brand avif (28 bytes), then a box.
	avifBytes = []byte("\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf\x00\x00\x00\x08meta")
	heicBytes = []byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic\x00\x00\x00\x08meta")
)

// returning is a model step that returns one image of type ct and
// bytes data.
func returning(ct string, data []byte) imagegentest.Step {
	return func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		return []imagegen.GeneratedImage{{ContentType: ct, Data: data}}, nil
	}
}

// putTypes is a BlobStore that records the content type of each Put.
type putTypes struct {
	imagegen.BlobStore
	mu    sync.Mutex
	types []string
}

func (p *putTypes) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	p.mu.Lock()
	p.types = append(p.types, contentType)
	p.mu.Unlock()
	return p.BlobStore.Put(ctx, key, r, size, contentType)
}

func (p *putTypes) puts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.types...)
}

// recordingPuts keeps the fixture's images in a memory BlobStore that
// records the content type of each Put in *into.
func recordingPuts(t *testing.T, into **putTypes) func(*imagegen.Config) {
	return onBlobs(t, func(b imagegen.BlobStore) imagegen.BlobStore {
		*into = &putTypes{BlobStore: b}
		return *into
	})
}

// A model (a user's own imagegen.Model) that returns something other
// than a raster image, whatever it declares, fails the attempt: the
// image origin would otherwise serve an HTML page or an SVG, scripts
// and all, as the service's own document. It is the model's bug, which
// another attempt repeats, so the task fails at once (not retried), is
// refunded, and nothing of it is stored.
func TestModelAnswerThatIsNotAnImageFailsTheTask(t *testing.T) {
	html := []byte("<!doctype html><script>alert(document.cookie)</script>")
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)
	for name, img := range map[string]imagegen.GeneratedImage{
		"html declared as html":    {ContentType: "text/html", Data: html},
		"html declared as nothing": {ContentType: "", Data: html},
		"svg declared as svg":      {ContentType: "image/svg+xml", Data: svg},
		"svg declared as nothing":  {ContentType: "", Data: svg},
		"svg with a charset":       {ContentType: "image/svg+xml; charset=utf-8", Data: svg},
		"garbage declared":         {ContentType: "garbage", Data: []byte("not a picture at all")},
		// BMP's signature is two letters: text that starts with them is
		// no picture, and a BMP is not a type the service keeps.
		"text that starts like a BMP": {ContentType: "image/bmp", Data: []byte("BM<script>alert(1)</script>")},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			var blobs *putTypes
			f := newFixture(t, imagegentest.NewModel(1, returning(img.ContentType, img.Data)), recordingPuts(t, &blobs))
			sub := f.submitFunded(t, "u")
			is.True(f.runOnce(t))
			task := f.task(t, "u", sub.TaskID)
			is.Equal(task.Status, imagegen.StatusFailed) // at once: not retried
			is.Equal(task.Attempt, 1)
			is.Equal(task.ErrorCode, imagegen.CodeProviderError)
			is.True(strings.Contains(task.Error, "not an image"))
			is.True(task.Refunded)
			is.Equal(len(task.Images), 0)
			is.Equal(f.balance(t, "u"), int64(1)) // refunded
			is.Equal(len(blobs.puts()), 0)        // no bytes stored
			is.Equal(len(f.model.Calls()), 1)
		})
	}
}

// The type a model declares is stored as its bare media type,
// lowercased, without parameters; an image declared as nothing, or as
// a type that is not an image's, is stored under the type its bytes
// show. The type the BlobStore is given (an object store serves it) is
// the same.
func TestImageTypeIsStoredNormalised(t *testing.T) {
	png := imagegentest.TinyPNG()
	for name, c := range map[string]struct {
		img  imagegen.GeneratedImage
		want string
	}{
		"declared":                       {imagegen.GeneratedImage{ContentType: "image/png", Data: png}, "image/png"},
		"with parameters, capitalised":   {imagegen.GeneratedImage{ContentType: "Image/PNG; foo=bar", Data: png}, "image/png"},
		"a PNG declared as nothing":      {imagegen.GeneratedImage{ContentType: "", Data: png}, "image/png"},
		"a PNG declared as octets":       {imagegen.GeneratedImage{ContentType: "application/octet-stream", Data: png}, "image/png"},
		"a PNG declared as html":         {imagegen.GeneratedImage{ContentType: "text/html", Data: png}, "image/png"},
		"a PNG declared unparseably":     {imagegen.GeneratedImage{ContentType: "image/png; =", Data: png}, "image/png"},
		"a WebP declared as nothing":     {imagegen.GeneratedImage{ContentType: "", Data: webpBytes}, "image/webp"},
		"an AVIF declared as nothing":    {imagegen.GeneratedImage{ContentType: "", Data: avifBytes}, "image/avif"},
		"an AVIF declared":               {imagegen.GeneratedImage{ContentType: "image/avif", Data: avifBytes}, "image/avif"},
		"a HEIC declared (Gemini's)":     {imagegen.GeneratedImage{ContentType: "image/heic", Data: heicBytes}, "image/heic"},
		"a HEIC declared as nothing":     {imagegen.GeneratedImage{ContentType: "", Data: heicBytes}, "image/heic"},
		"a GIF declared as nothing":      {imagegen.GeneratedImage{ContentType: "", Data: []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")}, "image/gif"},
		"a JPEG declared with a charset": {imagegen.GeneratedImage{ContentType: "image/JPEG;charset=x", Data: []byte("\xff\xd8\xff\xe0")}, "image/jpeg"},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			var blobs *putTypes
			f := newFixture(t, imagegentest.NewModel(1, returning(c.img.ContentType, c.img.Data)), recordingPuts(t, &blobs))
			sub := f.submitFunded(t, "u")
			is.True(f.runOnce(t))
			task := f.task(t, "u", sub.TaskID)
			is.Equal(task.Status, imagegen.StatusSuccess)
			is.Equal(len(task.Images), 1)
			img, err := f.svc.Image(ctx, task.Images[0])
			is.NoErr(err)
			is.Equal(img.ContentType, c.want)
			is.Equal(blobs.puts(), []string{c.want})
		})
	}
}

// Only one image of several that is not one fails the whole answer.
func TestOneImageThatIsNotAnImageFailsTheAnswer(t *testing.T) {
	is := is.New(t)
	two := func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		return []imagegen.GeneratedImage{
			{ContentType: "image/png", Data: imagegentest.TinyPNG()},
			{ContentType: "text/html", Data: []byte("<html>")},
		}, nil
	}
	var blobs *putTypes
	f := newFixture(t, imagegentest.NewModel(1, two), recordingPuts(t, &blobs))
	sub := f.submitFunded(t, "u")
	is.True(f.runOnce(t))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(len(task.Images), 0)
	is.Equal(f.balance(t, "u"), int64(1))
	is.Equal(len(blobs.puts()), 0)
}

// TestAnswerOfMoreImagesThanATaskKeepsFailsTheTask: a model (a user's
// own, say) that answers more than imagegen.MaxTaskImages pictures has
// none of them stored: the task fails, refunded, at once (each would
// be kept, served and listed on the task), and exactly the most passes.
func TestAnswerOfMoreImagesThanATaskKeepsFailsTheTask(t *testing.T) {
	for _, c := range []struct {
		n      int
		stored bool
	}{{imagegen.MaxTaskImages + 1, false}, {imagegen.MaxTaskImages, true}} {
		is := is.New(t)
		many := func(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
			imgs := make([]imagegen.GeneratedImage, c.n)
			for i := range imgs {
				imgs[i] = imagegen.GeneratedImage{ContentType: "image/png", Data: imagegentest.TinyPNG()}
			}
			return imgs, nil
		}
		var blobs *putTypes
		f := newFixture(t, imagegentest.NewModel(1, many), recordingPuts(t, &blobs))
		sub := f.submitFunded(t, "u")
		is.True(f.runOnce(t))
		task := f.task(t, "u", sub.TaskID)
		if !c.stored {
			is.Equal(task.Status, imagegen.StatusFailed)
			is.True(task.Refunded)
			is.Equal(task.Attempt, 1) // not retried: the model answers so again
			is.Equal(len(task.Images), 0)
			is.Equal(f.balance(t, "u"), int64(1))
			is.Equal(len(blobs.puts()), 0)
			continue
		}
		is.Equal(task.Status, imagegen.StatusSuccess)
		is.Equal(len(task.Images), c.n)
	}
}
