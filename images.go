package imagegen

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
)

// errImageBytes marks complete's errors of the BlobStore: the bytes were
// not stored, so nothing of the success was.
var errImageBytes = errors.New("imagegen: store image bytes")

// BytesCompleter is a Store that can keep a success's image bytes in its
// own BlobStore (its Blobs()) in the same transaction as the success:
// one step instead of a Put per image and then CompleteTask (store/postgres
// with its blobs table). The Service uses it when the Store has it.
type BytesCompleter interface {
	// CompleteTaskWithBytes is CompleteTask(ctx, id, attempt, images,
	// seed) that also stores data[i] as the bytes of images[i] in
	// Blobs(), all or nothing: when attempt no longer holds the task,
	// neither the bytes nor the records are kept (ErrLeaseLost). done is
	// false when the store cannot do it for these images (its Blobs() is
	// another BlobStore): nothing was done, and the caller puts the bytes
	// and completes the task itself.
	CompleteTaskWithBytes(ctx context.Context, id string, attempt int, images []Image, data [][]byte, seed *int64) (done bool, err error)
}

// complete stores the images of t's successful attempt: the bytes in the
// store's BlobStore first, then the records, with the task's success, in
// one CompleteTask, which also records seed (the seed the model reports
// it used, when not the task's; nil keeps the task's). A crash in
// between leaves only blobs without records (SweepBlobs deletes them); a
// lost lease deletes them at once. A BytesCompleter store takes the
// bytes and the success in one step instead.
func (s *Service) complete(ctx context.Context, t *Task, gen []GeneratedImage, seed *int64) error {
	imgs := make([]Image, len(gen))
	for i, g := range gen {
		sum := sha256.Sum256(g.Data)
		imgs[i] = Image{
			ID: NewOwnedID(t.Owner), TaskID: t.ID, Owner: t.Owner, ContentType: g.ContentType,
			Size: int64(len(g.Data)), Checksum: hex.EncodeToString(sum[:]),
		}
	}
	if bc, ok := s.cfg.Store.(BytesCompleter); ok {
		bytesCtx, cancel := context.WithTimeout(ctx, recordTimeout)
		defer cancel()
		data := make([][]byte, len(gen))
		for i, g := range gen {
			data[i] = g.Data
		}
		if done, err := bc.CompleteTaskWithBytes(bytesCtx, t.ID, t.Attempt, imgs, data, seed); done {
			return err
		}
	}
	if err := s.putImages(ctx, imgs, gen); err != nil {
		return err
	}
	// The record gets recordTimeout of its own, from when the bytes are
	// stored: the Puts may have used up to BlobTimeout.
	recordCtx, cancelRecord := context.WithTimeout(ctx, recordTimeout)
	defer cancelRecord()
	err := s.cfg.Store.CompleteTask(recordCtx, t.ID, t.Attempt, imgs, seed)
	if errors.Is(err, ErrLeaseLost) {
		s.deleteBlobs(recordCtx, imgs) // no record will ever point at them
	}
	return err
}

// putImages stores the bytes of a success's images, all at once, each
// Put bounded by Config.BlobTimeout alone (s.blobs): one after another
// under one deadline, four slow-but-healthy Puts would fail every
// attempt. If any fails, those that were stored are deleted and the
// error wraps errImageBytes.
func (s *Service) putImages(ctx context.Context, imgs []Image, gen []GeneratedImage) error {
	errs := make([]error, len(gen))
	var wg sync.WaitGroup
	for i, g := range gen {
		wg.Go(func() {
			errs[i] = s.blobs.Put(ctx, imgs[i].ID, bytes.NewReader(g.Data), imgs[i].Size, g.ContentType)
		})
	}
	wg.Wait()
	var stored []Image
	for i, err := range errs {
		if err == nil {
			stored = append(stored, imgs[i])
		}
	}
	if err := errors.Join(errs...); err != nil {
		delCtx, cancel := context.WithTimeout(ctx, recordTimeout)
		defer cancel()
		s.deleteBlobs(delCtx, stored)
		return fmt.Errorf("%w: %w", errImageBytes, err)
	}
	return nil
}

// deleteBlobs removes the bytes of images that will have no record (best
// effort: SweepBlobs removes whatever is left).
func (s *Service) deleteBlobs(ctx context.Context, imgs []Image) {
	for _, img := range imgs {
		if err := s.blobs.Delete(ctx, img.ID); err != nil {
			s.log.WarnContext(ctx, "delete image bytes without a record; the blob sweep will retry", "image_id", img.ID, "err", err)
		}
	}
}

// Image returns an image's record by id, or ErrImageNotFound. Its bytes
// are read with OpenImage.
func (s *Service) Image(ctx context.Context, id string) (*Image, error) {
	if CheckBlobKey(id) != nil {
		return nil, ErrImageNotFound
	}
	img, err := s.cfg.Store.Image(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("imagegen: image: %w", err)
	}
	return img, nil
}

// ReadImage reads bytes [off, off+n) of img (a record from Image) from
// the store's BlobStore, in one store call (ReadBlobRange) that fetches
// those bytes and no others; close the reader. Bytes missing for the
// record are ErrImageNotFound (logged: it should not happen); a range
// past the end of the bytes stored wraps ErrBlobSize. n == 0 only checks
// that the bytes are there.
func (s *Service) ReadImage(ctx context.Context, img *Image, off, n int64) (io.ReadCloser, error) {
	rd, err := ReadBlobRange(ctx, s.blobs, img.ID, off, n)
	if errors.Is(err, ErrBlobNotFound) {
		s.log.ErrorContext(ctx, "image record without bytes", "image_id", img.ID)
		return nil, fmt.Errorf("imagegen: image %s: %w", img.ID, ErrImageNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("imagegen: read image: %w", err)
	}
	return rd, nil
}

// OpenImage returns an image's record and its bytes, open for reading
// (close blob.Body), or ErrImageNotFound. Bytes whose record is gone are
// never returned, and a record whose bytes are missing is
// ErrImageNotFound too (logged: it should not happen).
func (s *Service) OpenImage(ctx context.Context, id string) (*Image, *Blob, error) {
	img, err := s.Image(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	b, err := s.blobs.Open(ctx, id)
	if errors.Is(err, ErrBlobNotFound) {
		s.log.ErrorContext(ctx, "image record without bytes", "image_id", id)
		return nil, nil, fmt.Errorf("imagegen: image %s: %w", id, ErrImageNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("imagegen: open image: %w", err)
	}
	return img, b, nil
}
