package openai_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/openai"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// noisePNG is a PNG of w×h random pixels: it does not compress, so its
// size is that of a real photograph's order (about 4 bytes a pixel).
func noisePNG(b *testing.B, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkGenerateBase64Answer: one 1024x1024 picture answered as
// b64_json (about 5.6 MB of JSON for a 4.2 MB PNG), decoded into the
// image; B/op is what the adapter allocates for it.
func BenchmarkGenerateBase64Answer(b *testing.B) {
	pic := noisePNG(b, 1024, 1024)
	answer := []byte(fmt.Sprintf(`{"created":1713833628,"data":[{"b64_json":%q}]}`, base64.StdEncoding.EncodeToString(pic)))
	for _, length := range []bool{true, false} {
		b.Run(map[bool]string{true: "content-length", false: "chunked"}[length], func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if length {
					w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
				}
				_, _ = w.Write(answer)
			}))
			defer srv.Close()
			m, err := openai.New(openai.Config{Config: provider.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-bench"}})
			if err != nil {
				b.Fatal(err)
			}
			req := providertest.T2I("noise", imagegen.Aspect1x1)
			b.SetBytes(int64(len(pic)))
			b.ReportAllocs()
			for b.Loop() {
				imgs, err := providertest.Generate(context.Background(), m, req)
				if err != nil {
					b.Fatal(err)
				}
				if !bytes.Equal(imgs[0].Data, pic) {
					b.Fatal("the picture changed on the way")
				}
			}
		})
	}
}
