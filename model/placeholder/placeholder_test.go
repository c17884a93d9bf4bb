package placeholder_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/model/placeholder"
)

var ctx = context.Background()

func generate(t *testing.T, m *placeholder.Model, req imagegen.Request) image.Image {
	t.Helper()
	out, err := m.Generate(ctx, imagegen.Generation{TaskID: "t", Model: placeholder.Name, Request: req, Attempt: 1})
	is.New(t).NoErr(err)
	is.New(t).Equal(len(out), 1)
	is.New(t).Equal(out[0].ContentType, "image/png")
	img, err := png.Decode(bytes.NewReader(out[0].Data))
	is.New(t).NoErr(err)
	return img
}

func TestSizesFollowTheAspectRatio(t *testing.T) {
	m, err := placeholder.New(placeholder.Options{})
	is.New(t).NoErr(err)
	want := map[imagegen.AspectRatio][2]int{
		imagegen.AspectAuto: {1024, 1024}, imagegen.Aspect1x1: {1024, 1024},
		imagegen.Aspect16x9: {1024, 576}, imagegen.Aspect9x16: {576, 1024},
		imagegen.Aspect3x2: {1024, 683}, imagegen.Aspect2x3: {683, 1024},
		imagegen.Aspect4x3: {1024, 768}, imagegen.Aspect3x4: {768, 1024},
	}
	for ratio, wh := range want {
		t.Run(string(ratio), func(t *testing.T) {
			img := generate(t, m, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a fox", AspectRatio: ratio})
			is.New(t).Equal([2]int{img.Bounds().Dx(), img.Bounds().Dy()}, wh)
		})
	}
}

func TestSameInputSameBytes(t *testing.T) {
	is := is.New(t)
	m, err := placeholder.New(placeholder.Options{LongSide: 64})
	is.NoErr(err)
	gen := func(prompt string) []byte {
		out, err := m.Generate(ctx, imagegen.Generation{Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: prompt, AspectRatio: imagegen.Aspect16x9}})
		is.NoErr(err)
		return out[0].Data
	}
	is.Equal(gen("a fox"), gen("a fox"))
	is.True(!bytes.Equal(gen("a fox"), gen("a cat")))
}

func TestBlockListRefuses(t *testing.T) {
	is := is.New(t)
	m, err := placeholder.New(placeholder.Options{LongSide: 16})
	is.NoErr(err)
	_, err = m.Generate(ctx, imagegen.Generation{Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "some NSFW art"}})
	var me *imagegen.ModelError
	is.True(errors.As(err, &me))
	is.True(me.Refused)
	is.True(!me.Retryable)
	is.True(!strings.Contains(strings.ToLower(me.UserMessage()), "nsfw")) // the list is not revealed

	open, err := placeholder.New(placeholder.Options{LongSide: 16, BlockList: []string{}})
	is.NoErr(err)
	_, err = open.Generate(ctx, imagegen.Generation{Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "some NSFW art"}})
	is.NoErr(err)
}

// refServer serves a 300x600 PNG at /tall.png and 404 elsewhere.
func refServer(t *testing.T) *httptest.Server {
	tall := image.NewNRGBA(image.Rect(0, 0, 300, 600))
	for i := range tall.Pix {
		tall.Pix[i] = 200
	}
	tall.Set(0, 0, color.NRGBA{R: 1, A: 255})
	var buf bytes.Buffer
	_ = png.Encode(&buf, tall)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tall.png" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(buf.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestImageToImage(t *testing.T) {
	is := is.New(t)
	srv := refServer(t)
	f, err := fetch.New(fetch.Options{AllowPrivate: true})
	is.NoErr(err)
	m, err := placeholder.New(placeholder.Options{LongSide: 200, Fetcher: f})
	is.NoErr(err)
	req := imagegen.Request{Scene: imagegen.SceneImageToImage, Prompt: "make it blue", AspectRatio: imagegen.AspectAuto, ImageInput: []string{srv.URL + "/tall.png"}}
	img := generate(t, m, req)
	is.Equal([2]int{img.Bounds().Dx(), img.Bounds().Dy()}, [2]int{113, 200}) // auto: the 300x600 reference is nearest 9:16
	withRef := img
	req.ImageInput = nil
	req.Scene = imagegen.SceneTextToImage
	req.AspectRatio = imagegen.Aspect9x16
	without := generate(t, m, req)
	is.True(!sameImage(withRef, without)) // the reference is drawn in
}

func sameImage(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			if a.At(x, y) != b.At(x, y) {
				return false
			}
		}
	}
	return true
}

func TestUnusableReference(t *testing.T) {
	is := is.New(t)
	srv := refServer(t)
	f, err := fetch.New(fetch.Options{AllowPrivate: true})
	is.NoErr(err)
	m, err := placeholder.New(placeholder.Options{LongSide: 16, Fetcher: f})
	is.NoErr(err)
	_, err = m.Generate(ctx, imagegen.Generation{Request: imagegen.Request{Scene: imagegen.SceneImageToImage, Prompt: "x", ImageInput: []string{srv.URL + "/missing.png"}}})
	var me *imagegen.ModelError
	is.True(errors.As(err, &me))
	is.True(me.InvalidInput)
	is.True(!me.Retryable)
	is.True(strings.HasPrefix(me.UserMessage(), "image_input[0] could not be used"))
	is.True(!strings.Contains(me.UserMessage(), "127.0.0.1")) // no addresses in the message

	guarded, err := fetch.New(fetch.Options{}) // loopback refused
	is.NoErr(err)
	m, err = placeholder.New(placeholder.Options{LongSide: 16, Fetcher: guarded})
	is.NoErr(err)
	_, err = m.Generate(ctx, imagegen.Generation{Request: imagegen.Request{Scene: imagegen.SceneImageToImage, Prompt: "x", ImageInput: []string{srv.URL + "/tall.png"}}})
	is.True(errors.As(err, &me))
	is.Equal(me.UserMessage(), "image_input[0] could not be used: address not allowed")
}

func TestDelayWaitsOnTheClock(t *testing.T) {
	is := is.New(t)
	clock := imagegentest.NewClock(time.Time{})
	m, err := placeholder.New(placeholder.Options{LongSide: 16, Delay: 2 * time.Second, Clock: clock})
	is.NoErr(err)
	done := make(chan error, 1)
	go func() {
		_, err := m.Generate(ctx, imagegen.Generation{Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "x"}})
		done <- err
	}()
	for clock.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("finished before its delay")
	default:
	}
	clock.Advance(2 * time.Second)
	is.NoErr(<-done)

	// A context that ends during the delay stops it.
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		_, err := m.Generate(cctx, imagegen.Generation{Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "x"}})
		done <- err
	}()
	for clock.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	err = <-done
	var me *imagegen.ModelError
	is.True(errors.As(err, &me))
	is.True(me.Retryable)
	is.True(errors.Is(err, context.Canceled))
}

func TestPlanAndOptions(t *testing.T) {
	is := is.New(t)
	m, err := placeholder.New(placeholder.Options{Cost: 3})
	is.NoErr(err)
	plan, err := m.Plan(imagegen.Request{})
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "placeholder", Cost: 3})
	for _, o := range []placeholder.Options{{LongSide: 8}, {LongSide: 5000}, {Cost: 4}, {Cost: -1}, {Delay: -time.Second}} {
		_, err := placeholder.New(o)
		is.True(err != nil)
	}
}
