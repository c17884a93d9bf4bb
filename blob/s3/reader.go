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
	if off < 0 || n < 0 || n > math.MaxInt64-off { // no object is that long
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
	if size, ok := rangeTotal(aws.ToString(out.ContentRange)); ok && !imagegen.RangeFits(off, n, size) {
		_ = out.Body.Close()
		return nil, imagegen.RangePastEnd(key, off, n, size)
	}
	return out.Body, nil
}

// rangeTotal reads the complete length of a Content-Range answer
// ("bytes 0-99/1234").
func rangeTotal(contentRange string) (int64, bool) {
	_, total, ok := strings.Cut(contentRange, "/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(total, 10, 64)
	return n, err == nil
}

// isInvalidRange reports a 416 answer (a range past the object's end).
func isInvalidRange(err error) bool {
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusRequestedRangeNotSatisfiable
}
