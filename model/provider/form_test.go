package provider_test

import (
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/provider"
)

func TestPostForm(t *testing.T) {
	is := is.New(t)
	img := []byte("\x89PNG\r\n\x1a\nnot really")
	build, err := provider.PostForm("http://127.0.0.1/v1/edit",
		[]provider.FormField{{"prompt", "a fox"}, {"mode", "image-to-image"}},
		[]provider.FormFile{{Name: "image", Filename: `in"put.png`, ContentType: provider.PNG, Data: img}},
		http.Header{"Authorization": {"Bearer k"}})
	is.NoErr(err)

	for range 2 { // every attempt gets the whole body again
		req, err := build(context.Background())
		is.NoErr(err)
		is.Equal(req.Method, http.MethodPost)
		is.Equal(req.Header.Get("Authorization"), "Bearer k")
		is.Equal(req.Header.Get("Accept"), "application/json")
		mt, params, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
		is.NoErr(err)
		is.Equal(mt, "multipart/form-data")

		mr := multipart.NewReader(req.Body, params["boundary"])
		var got []string
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			is.NoErr(err)
			data, _ := io.ReadAll(p)
			got = append(got, p.FormName()+"|"+p.FileName()+"|"+p.Header.Get("Content-Type")+"|"+string(data))
		}
		is.Equal(got, []string{
			"prompt|||a fox",
			"mode|||image-to-image",
			`image|in"put.png|image/png|` + string(img), // fields first, then files, in order
		})
	}
}

func TestFileExtension(t *testing.T) {
	is := is.New(t)
	for ct, want := range map[string]string{provider.PNG: "png", provider.JPEG: "jpg", provider.WebP: "webp", provider.GIF: "gif", provider.HEIC: "bin", "": "bin"} {
		is.Equal(provider.FileExtension(ct), want)
	}
}
