package blobtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// pattern returns n bytes that differ at every offset mod 251, so a read
// from the wrong place is caught.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i%251) ^ seed
	}
	return b
}

func put(t *testing.T, s imagegen.BlobStore, key string, data []byte) {
	t.Helper()
	if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data)), "image/png"); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func testPutOpen(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	key := keys(t, s)("a.png")
	data := pattern(3000, 1)
	before := time.Now().Add(-time.Minute)
	put(t, s, key, data)
	info, got := ReadAll(t, s, key)
	is.True(bytes.Equal(got, data))
	is.Equal(info.Key, key)
	is.Equal(info.Size, int64(len(data)))
	is.True(info.ModTime.After(before)) // ModTime is when it was written
	is.True(info.ModTime.Before(time.Now().Add(time.Minute)))
}

func testStat(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	key := keys(t, s)("s")
	put(t, s, key, pattern(777, 2))
	info, err := s.Stat(ctx, key)
	is.NoErr(err)
	is.Equal(info.Key, key)
	is.Equal(info.Size, int64(777))
	is.True(!info.ModTime.IsZero())
	opened, _ := ReadAll(t, s, key)
	is.Equal(opened.Size, info.Size)
	is.Equal(opened.ETag, info.ETag)
}

func testMissing(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	key := keys(t, s)("never-written")
	_, err := s.Open(ctx, key)
	is.True(errors.Is(err, imagegen.ErrBlobNotFound))
	_, err = s.Stat(ctx, key)
	is.True(errors.Is(err, imagegen.ErrBlobNotFound))
}

func testReplace(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	key := keys(t, s)("r")
	put(t, s, key, pattern(500, 3))
	first, _ := s.Stat(ctx, key)
	put(t, s, key, pattern(200, 4))
	info, got := ReadAll(t, s, key)
	is.True(bytes.Equal(got, pattern(200, 4)))
	is.Equal(info.Size, int64(200))
	if first.ETag != "" {
		is.True(info.ETag != first.ETag) // new bytes, new validator
	}
}

func testDelete(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	name := keys(t, s)
	gone, kept := name("gone"), name("kept")
	put(t, s, gone, pattern(10, 5))
	put(t, s, kept, pattern(10, 6))
	is.NoErr(s.Delete(ctx, gone))
	_, err := s.Open(ctx, gone)
	is.True(errors.Is(err, imagegen.ErrBlobNotFound))
	is.NoErr(s.Delete(ctx, gone))              // again: not an error
	is.NoErr(s.Delete(ctx, name("never-put"))) // never there: not an error
	_, got := ReadAll(t, s, kept)
	is.True(bytes.Equal(got, pattern(10, 6)))
}

func testSizeMismatch(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	name := keys(t, s)
	short, long, kept := name("short"), name("long"), name("kept")
	err := s.Put(ctx, short, bytes.NewReader(pattern(99, 7)), 100, "image/png")
	is.True(errors.Is(err, imagegen.ErrBlobSize))
	_, err = s.Stat(ctx, short)
	is.True(errors.Is(err, imagegen.ErrBlobNotFound))
	err = s.Put(ctx, long, bytes.NewReader(pattern(101, 7)), 100, "image/png")
	is.True(errors.Is(err, imagegen.ErrBlobSize))
	_, err = s.Stat(ctx, long)
	is.True(errors.Is(err, imagegen.ErrBlobNotFound))
	// A size far beyond the body's is refused, not made room for first
	// (1 PiB: past what a slice may hold).
	huge := name("huge")
	err = s.Put(ctx, huge, bytes.NewReader(pattern(100, 7)), 1<<50, "image/png")
	is.True(errors.Is(err, imagegen.ErrBlobSize))
	_, err = s.Stat(ctx, huge)
	is.True(errors.Is(err, imagegen.ErrBlobNotFound))
	// A negative size is no size at all, even for an empty body.
	negative := name("negative")
	err = s.Put(ctx, negative, bytes.NewReader(nil), -1, "image/png")
	is.True(errors.Is(err, imagegen.ErrBlobSize))
	_, err = s.Stat(ctx, negative)
	is.True(errors.Is(err, imagegen.ErrBlobNotFound))

	// A failed replacement leaves the old bytes.
	put(t, s, kept, pattern(50, 8))
	err = s.Put(ctx, kept, io.MultiReader(bytes.NewReader(pattern(10, 9)), failing{}), 60, "image/png")
	is.True(err != nil)
	_, got := ReadAll(t, s, kept)
	is.True(bytes.Equal(got, pattern(50, 8)))
}

// failing is a reader that breaks, as a dropped upload would.
type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func testInvalidKeys(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	for _, key := range []string{"", "../escape", "a/b", ".hidden", "sp ace", "nul\x00", strings.Repeat("k", imagegen.MaxBlobKeyLen+1)} {
		err := s.Put(ctx, key, bytes.NewReader([]byte("x")), 1, "image/png")
		is.True(errors.Is(err, imagegen.ErrInvalidBlobKey)) // Put refuses the key
		_, err = s.Open(ctx, key)
		is.True(errors.Is(err, imagegen.ErrInvalidBlobKey)) // so does Open
		is.True(errors.Is(s.Delete(ctx, key), imagegen.ErrInvalidBlobKey))
	}
}

func testSeek(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	key := keys(t, s)("seek")
	data := pattern(10_000, 10)
	put(t, s, key, data)
	b, err := s.Open(ctx, key)
	is.NoErr(err)
	defer b.Body.Close()

	end, err := b.Body.Seek(0, io.SeekEnd)
	is.NoErr(err)
	is.Equal(end, int64(len(data)))
	_, err = b.Body.Seek(4321, io.SeekStart)
	is.NoErr(err)
	part := make([]byte, 100)
	_, err = io.ReadFull(b.Body, part)
	is.NoErr(err)
	is.True(bytes.Equal(part, data[4321:4421]))
	// Relative seeks from where reading stopped, backwards too.
	pos, err := b.Body.Seek(-421, io.SeekCurrent)
	is.NoErr(err)
	is.Equal(pos, int64(4000))
	rest, err := io.ReadAll(b.Body)
	is.NoErr(err)
	is.True(bytes.Equal(rest, data[4000:]))
	_, err = b.Body.Seek(-1, io.SeekStart)
	is.True(err != nil) // before the start is an error
}

func testLarge(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	key := keys(t, s)("large")
	data := pattern(3<<20+17, 11) // a big PNG's size, past any chunking boundary
	put(t, s, key, data)
	_, got := ReadAll(t, s, key)
	is.Equal(len(got), len(data))
	is.True(bytes.Equal(got, data))
}

func testList(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	name := keys(t, s)
	want := map[string]int64{}
	for i := range 5 {
		k := name(fmt.Sprintf("list-%d", i))
		put(t, s, k, pattern(100+i, 12))
		want[k] = int64(100 + i)
	}
	deleted := name("list-deleted")
	put(t, s, deleted, pattern(1, 13))
	is.NoErr(s.Delete(ctx, deleted))

	seen := map[string]int64{}
	is.NoErr(s.List(ctx, func(info imagegen.BlobInfo) error {
		if _, ok := want[info.Key]; ok || info.Key == deleted {
			seen[info.Key] = info.Size
			is.True(!info.ModTime.IsZero())
		}
		return nil
	}))
	is.Equal(seen, want)
}

func testListStops(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	name := keys(t, s)
	put(t, s, name("1"), pattern(1, 14))
	put(t, s, name("2"), pattern(1, 14))
	stop := errors.New("stop")
	calls := 0
	err := s.List(ctx, func(imagegen.BlobInfo) error { calls++; return stop })
	is.True(errors.Is(err, stop))
	is.Equal(calls, 1)
}

func testConcurrent(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	name := keys(t, s)
	ks := make([]string, 8)
	for i := range ks {
		ks[i] = name(fmt.Sprintf("c-%d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(ks))
	for i, k := range ks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := pattern(20_000, byte(i))
			if err := s.Put(ctx, k, bytes.NewReader(data), int64(len(data)), "image/png"); err != nil {
				errs <- err
				return
			}
			b, err := s.Open(ctx, k)
			if err != nil {
				errs <- err
				return
			}
			defer b.Body.Close()
			got, err := io.ReadAll(b.Body)
			if err != nil || !bytes.Equal(got, data) {
				errs <- fmt.Errorf("%s read back wrong (%d bytes, %v)", k, len(got), err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
}

func testEmpty(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	key := keys(t, s)("empty")
	put(t, s, key, nil)
	info, got := ReadAll(t, s, key)
	is.Equal(info.Size, int64(0))
	is.Equal(len(got), 0)
}

// testPresign runs for stores that presign: the URL, fetched with a
// plain HTTP client, gives the bytes.
func testPresign(t *testing.T, s imagegen.BlobStore) {
	is := is.New(t)
	p, ok := s.(imagegen.BlobPresigner)
	is.True(ok) // Run adds this case only for presigners
	key := keys(t, s)("presigned")
	data := pattern(4096, 15)
	put(t, s, key, data)
	u, err := p.PresignGet(ctx, key, time.Minute)
	is.NoErr(err)
	is.True(bytes.Equal(FetchPresigned(t, u), data))
}
