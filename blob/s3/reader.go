package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/imagegen/imagegen"

	"github.com/imagegen/imagegen/internal/seek"
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
		if start, _, ok := contentRange(aws.ToString(out.ContentRange)); r.pos > 0 && (!ok || start != r.pos) {
			_ = out.Body.Close()
			return 0, notTheRange(r.key, r.pos, out.ContentRange)
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

// ReadRange GETs exactly bytes [off, off+n) of the object: one request,
// whose Content-Range also tells the object's size, so a range past its
// end is an error before any byte is read.
func (s *Store) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return nil, err
	}
	if !imagegen.RangeFits(off, n, math.MaxInt64) { // no object is that long
		return nil, imagegen.RangePastEnd(key, off, n, -1)
	}
	if n == 0 { // a look, not a read: HEAD
		info, err := s.Stat(ctx, key)
		if err != nil {
			return nil, err
		}
		if off > info.Size {
			return nil, imagegen.RangePastEnd(key, off, n, info.Size)
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	out, err := s.client.GetObject(ctx, &awss3.GetObjectInput{
		Bucket: &s.bucket, Key: aws.String(s.prefix + key),
		Range: aws.String("bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+n-1, 10)),
	})
	if isInvalidRange(err) {
		return nil, imagegen.RangePastEnd(key, off, n, -1)
	}
	if err != nil {
		return nil, s.wrap("read", key, err)
	}
	start, size, ranged := contentRange(aws.ToString(out.ContentRange))
	if !ranged { // a service that ignores Range answers the whole object
		start, size = 0, aws.ToInt64(out.ContentLength)
	}
	switch {
	case !ranged && out.ContentLength == nil:
		_ = out.Body.Close()
		return nil, notTheRange(key, off, out.ContentRange)
	case !imagegen.RangeFits(off, n, size):
		_ = out.Body.Close()
		return nil, imagegen.RangePastEnd(key, off, n, size)
	case start != off || !ranged && n != size:
		_ = out.Body.Close()
		return nil, notTheRange(key, off, out.ContentRange)
	}
	return out.Body, nil
}

// contentRange reads the first byte and the complete length of a
// Content-Range answer ("bytes 0-99/1234").
func contentRange(header string) (start, total int64, ok bool) {
	first, rest, ok1 := strings.Cut(strings.TrimPrefix(header, "bytes "), "-")
	_, length, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	start, err1 := strconv.ParseInt(first, 10, 64)
	total, err2 := strconv.ParseInt(length, 10, 64)
	return start, total, err1 == nil && err2 == nil
}

// notTheRange is the error of an answer to a GET from off that starts
// elsewhere: a service that ignored the Range (and sent the object from
// its first byte) must not have that read as the bytes asked for.
func notTheRange(key string, off int64, contentRange *string) error {
	got := aws.ToString(contentRange)
	if got == "" {
		got = "the whole object"
	}
	return fmt.Errorf("s3 blobs: read %s: asked for the bytes from %d on, the service answered %s (does it ignore Range?)", key, off, got)
}

// isInvalidRange reports a 416 answer (a range past the object's end).
func isInvalidRange(err error) bool {
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusRequestedRangeNotSatisfiable
}
