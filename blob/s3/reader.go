package s3

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/imagegen/imagegen/blob/internal/seek"
)

// rangeReader GETs the object from pos on at its first Read, and again
// after a Seek elsewhere, streaming the answer's body.
type rangeReader struct {
	ctx  context.Context
	s    *Store
	key  string
	size int64
	etag string // If-Match: a replaced object is an error, not a mix
	pos  int64
	body io.ReadCloser
}

func (r *rangeReader) Read(p []byte) (int, error) {
	if r.pos >= r.size {
		return 0, io.EOF
	}
	if r.body == nil {
		in := &awss3.GetObjectInput{Bucket: &r.s.bucket, Key: &r.key, IfMatch: nonEmpty(r.etag)}
		if r.pos > 0 {
			in.Range = aws.String("bytes=" + strconv.FormatInt(r.pos, 10) + "-")
		}
		out, err := r.s.client.GetObject(r.ctx, in)
		if err != nil {
			return 0, fmt.Errorf("s3 blobs: read %s: %w", r.key, err)
		}
		r.body = out.Body
	}
	n, err := r.body.Read(p)
	r.pos += int64(n)
	if err == io.EOF && r.pos < r.size {
		err = fmt.Errorf("s3 blobs: read %s: %w", r.key, io.ErrUnexpectedEOF)
	}
	return n, err
}

func (r *rangeReader) Seek(offset int64, whence int) (int64, error) {
	abs, err := seek.Abs(r.pos, r.size, offset, whence)
	if err != nil {
		return abs, fmt.Errorf("s3 blobs: %w", err)
	}
	if abs != r.pos {
		_ = r.Close()
		r.pos = abs
	}
	return abs, nil
}

func (r *rangeReader) Close() error {
	if r.body == nil {
		return nil
	}
	err := r.body.Close()
	r.body = nil
	return err
}
