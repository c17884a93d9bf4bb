package gemini

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// An inlineData part whose data is empty, or not the PNG it declares, is
// a retryable bad answer, not a picture (found by FuzzAnswer: an image
// part without data came back as an empty image); HEIC or HEIF, which
// net/http cannot tell from the bytes, is taken as declared, lower case,
// and any other type it cannot tell is refused (an SVG was kept as
// image/svg+xml, which the service then served as such).
func TestInlineImage(t *testing.T) {
	for name, tc := range map[string]struct {
		blob   blob
		wantCT string // "" for an error
	}{
		"no data":             {blob{MimeType: "image/png"}, ""},
		"no data, odd type":   {blob{MimeType: "imAge/0"}, ""},
		"not the PNG it says": {blob{MimeType: "image/png", Data: "AAAA"}, ""},
		"HEIC, as declared":   {blob{MimeType: "IMAGE/HEIC", Data: "AAAA"}, "image/heic"},
		// The service serves an image with the type it was stored
		// under, on its own origin: an SVG (script and all) an answer
		// declared would be a page of the service's, not a picture.
		"SVG, as declared":  {blob{MimeType: "image/svg+xml", Data: base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`))}, ""},
		"an odd image type": {blob{MimeType: "image/x-anything", Data: "AAAA"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			img, err := inlineImage(0, &tc.blob)
			if tc.wantCT != "" {
				if err != nil || img.ContentType != tc.wantCT || len(img.Data) != 3 {
					t.Fatalf("got %q (%d bytes), %v; want %s", img.ContentType, len(img.Data), err, tc.wantCT)
				}
				return
			}
			var me *imagegen.ModelError
			if !errors.As(err, &me) || !me.Retryable || me.Message != provider.MsgBadAnswer {
				t.Fatalf("got %q, %v; want a retryable bad answer", img.ContentType, err)
			}
		})
	}
}
