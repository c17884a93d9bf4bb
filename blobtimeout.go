package imagegen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultBlobTimeout is the default of Config.BlobTimeout.
const DefaultBlobTimeout = 10 * time.Second

// timedBlobs is the BlobStore a Service uses: the store's, with every
// call bounded by Config.BlobTimeout. Put, Stat and Delete run under a
// deadline; Open and ReadRange too, and then each Read of the body they
// return; List gets that long to hand over each blob (the time fn takes
// is not counted). A call that runs out of time fails with an error
// wrapping ErrBlobTimeout. The bound needs a BlobStore that gives up when
// its context ends, as every one of this module does (blob/redis through
// go-redis, which by default notices a context's end between retries
// and at its ReadTimeout, 3 s: set ContextTimeoutEnabled on the client
// for an exact bound).
type timedBlobs struct {
	s BlobStore
	d time.Duration
}

var (
	_ BlobStore       = timedBlobs{}
	_ BlobRangeReader = timedBlobs{}
)

func (t timedBlobs) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	w := t.watch(ctx, "put", key)
	defer w.stop()
	return w.do(func() error { return t.s.Put(w.ctx, key, r, size, contentType) })
}

func (t timedBlobs) Stat(ctx context.Context, key string) (info BlobInfo, err error) {
	w := t.watch(ctx, "stat", key)
	defer w.stop()
	err = w.do(func() (err error) {
		info, err = t.s.Stat(w.ctx, key)
		return err
	})
	return info, err
}

func (t timedBlobs) Delete(ctx context.Context, key string) error {
	w := t.watch(ctx, "delete", key)
	defer w.stop()
	return w.do(func() error { return t.s.Delete(w.ctx, key) })
}

// Open opens the blob under the deadline; each Read of its body gets the
// deadline again.
func (t timedBlobs) Open(ctx context.Context, key string) (*Blob, error) {
	w := t.watch(ctx, "read", key)
	var b *Blob
	err := w.do(func() (err error) {
		b, err = t.s.Open(w.ctx, key)
		return err
	})
	if err != nil {
		w.stop()
		return nil, err
	}
	b.Body = &timedBody{r: b.Body, w: w}
	return b, nil
}

// ReadRange starts reading the range under the deadline; each Read gets
// the deadline again.
func (t timedBlobs) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	w := t.watch(ctx, "read", key)
	var rd io.ReadCloser
	err := w.do(func() (err error) {
		rd, err = ReadBlobRange(w.ctx, t.s, key, off, n)
		return err
	})
	if err != nil {
		w.stop()
		return nil, err
	}
	return &timedBody{r: rd, w: w}, nil
}

// List lists the blobs; the store must hand over each one (or end)
// within the deadline.
func (t timedBlobs) List(ctx context.Context, fn func(BlobInfo) error) error {
	w := t.watch(ctx, "list", "")
	defer w.stop()
	return w.do(func() error {
		return t.s.List(w.ctx, func(b BlobInfo) error {
			if !w.timer.Stop() {
				return w.ctx.Err() // the deadline passed as the store answered
			}
			defer w.timer.Reset(w.d)
			return fn(b)
		})
	})
}

// watch returns a watchdog for calls on key.
func (t timedBlobs) watch(parent context.Context, op, key string) *watchdog {
	ctx, cancel := context.WithCancel(parent)
	w := &watchdog{ctx: ctx, parent: parent, cancel: cancel, d: t.d, op: op, key: key}
	w.timer = time.AfterFunc(t.d, cancel)
	w.timer.Stop() // armed by each call
	return w
}

// watchdog gives each call made on its context d to answer, and cancels
// the context when one does not: once it has, every later call fails.
type watchdog struct {
	ctx, parent context.Context
	cancel      context.CancelFunc
	timer       *time.Timer
	d           time.Duration
	op, key     string
}

// do runs fn, which calls the store with w.ctx, under the deadline.
func (w *watchdog) do(fn func() error) error {
	start := time.Now()
	if w.expired() {
		return w.timedOut(w.ctx.Err(), 0)
	}
	w.timer.Reset(w.d)
	err := fn()
	w.timer.Stop()
	if err != nil && w.expired() {
		return w.timedOut(err, time.Since(start))
	}
	return err
}

// expired reports whether a deadline ended w.ctx: the watchdog's (only
// its timer cancels w.ctx before stop), or the caller's own. A caller
// that cancelled is not a store that timed out.
func (w *watchdog) expired() bool {
	return w.ctx.Err() != nil && (w.parent.Err() == nil || errors.Is(w.parent.Err(), context.DeadlineExceeded))
}

func (w *watchdog) timedOut(err error, waited time.Duration) error {
	return fmt.Errorf("%w: %s %s: no answer in %v: %w", ErrBlobTimeout, w.op, w.key, waited.Round(time.Millisecond), err)
}

func (w *watchdog) stop() {
	w.timer.Stop()
	w.cancel()
}

// timedBody is a body whose every Read is under its watchdog's deadline.
type timedBody struct {
	r io.ReadCloser
	w *watchdog
}

func (b *timedBody) Read(p []byte) (n int, err error) {
	err = b.w.do(func() (err error) {
		n, err = b.r.Read(p)
		return err
	})
	return n, err
}

// Seek passes to the body (an Open's body can seek; seeking reads
// nothing).
func (b *timedBody) Seek(offset int64, whence int) (int64, error) {
	s, ok := b.r.(io.Seeker)
	if !ok {
		return 0, errors.New("imagegen: this blob reader cannot seek")
	}
	return s.Seek(offset, whence)
}

func (b *timedBody) Close() error {
	b.w.stop()
	return b.r.Close()
}
