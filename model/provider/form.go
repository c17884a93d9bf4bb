package provider

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
)

// FormField is one text field of a multipart/form-data body.
type FormField struct{ Name, Value string }

// FormFile is one file part of a multipart/form-data body, sent with its
// own Content-Type (an image/* type, not application/octet-stream).
type FormFile struct {
	Name, Filename, ContentType string
	Data                        []byte
}

// PostForm returns a BuildFunc that POSTs a multipart/form-data body:
// the fields, then the files, in order. The body is built once, here,
// and sent again on every attempt; the boundary is the writer's own.
func PostForm(url string, fields []FormField, files []FormFile, header http.Header) (BuildFunc, error) {
	body, contentType, err := multipartBody(fields, files)
	if err != nil {
		return nil, err
	}
	return Post(url, contentType, body, header), nil
}

// multipartBody encodes fields then files as multipart/form-data and
// returns the body and its Content-Type (with the boundary).
func multipartBody(fields []FormField, files []FormFile) ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, f := range fields {
		if err := w.WriteField(f.Name, f.Value); err != nil {
			return nil, "", fmt.Errorf("writing field %s: %w", f.Name, err)
		}
	}
	for _, f := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, escapeQuotes(f.Name), escapeQuotes(f.Filename)))
		h.Set("Content-Type", f.ContentType)
		part, err := w.CreatePart(h)
		if err != nil {
			return nil, "", fmt.Errorf("writing file %s: %w", f.Name, err)
		}
		if _, err := part.Write(f.Data); err != nil {
			return nil, "", fmt.Errorf("writing file %s: %w", f.Name, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("closing the form: %w", err)
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

// escapeQuotes escapes a Content-Disposition parameter as mime/multipart
// does for CreateFormFile.
func escapeQuotes(s string) string {
	return strings.NewReplacer("\\", "\\\\", `"`, "\\\"").Replace(s)
}

// FileExtension is the usual file extension (without the dot) of an
// image type: "png", "jpg", "webp", "gif"; "bin" for anything else.
// Multipart APIs often read a file part's type from its name.
func FileExtension(contentType string) string {
	switch contentType {
	case PNG:
		return "png"
	case JPEG:
		return "jpg"
	case WebP:
		return "webp"
	case GIF:
		return "gif"
	}
	return "bin"
}
