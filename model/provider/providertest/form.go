package providertest

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
)

// FormFile is a file part of a multipart form a fake received.
type FormFile struct {
	Name, Filename, ContentType string
	Data                        []byte
}

// ParseForm reads a multipart/form-data body with the given boundary:
// its text fields by name, in order, and its file parts in order.
func ParseForm(body []byte, boundary string) (fields map[string][]string, files []FormFile, err error) {
	if boundary == "" {
		return nil, nil, fmt.Errorf("no boundary")
	}
	fields = map[string][]string{}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return fields, files, nil
		}
		if err != nil {
			return nil, nil, err
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, nil, err
		}
		if p.FileName() != "" {
			files = append(files, FormFile{p.FormName(), p.FileName(), p.Header.Get("Content-Type"), data})
			continue
		}
		fields[p.FormName()] = append(fields[p.FormName()], string(data))
	}
}
