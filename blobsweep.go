package imagegen

import (
	"context"
	"errors"
	"fmt"
)

// SweepBlobs deletes the blobs that no image record points at: those of
// images whose record retention removed, and orphans of a worker that
// crashed between writing the bytes and the record (or failed to write
// the record). A blob younger than Config.OrphanGrace is kept whatever
// its record, since its record may be on its way. It returns how many
// blobs it deleted.
//
// Run calls it every Config.BlobSweepInterval, so the bytes of an
// expired image are gone at most that long (plus the grace, for very
// short retentions) after its record. Any number of processes may sweep
// at once: deletes are idempotent. The cost is one List of the BlobStore
// and one record lookup per blob older than the grace; with object
// storage, a bucket lifecycle rule (expire after retention + 1 day) is a
// cheap backstop beside it.
func (s *Service) SweepBlobs(ctx context.Context) (int, error) {
	blobs := s.blobs
	cutoff := s.cfg.Clock.Now().Add(-s.cfg.OrphanGrace)
	deleted := 0
	err := blobs.List(ctx, func(b BlobInfo) error {
		if b.ModTime.After(cutoff) {
			return nil
		}
		_, err := s.cfg.Store.Image(ctx, b.Key)
		if !errors.Is(err, ErrImageNotFound) {
			return err // nil: the record is live
		}
		if err := blobs.Delete(ctx, b.Key); err != nil {
			return err
		}
		deleted++
		return nil
	})
	if err != nil {
		return deleted, fmt.Errorf("imagegen: sweep blobs: %w", err)
	}
	return deleted, nil
}

// sweepLoop runs SweepBlobs every Config.BlobSweepInterval until ctx ends.
func (s *Service) sweepLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.Clock.After(s.cfg.BlobSweepInterval):
		}
		n, err := s.SweepBlobs(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.ErrorContext(ctx, "sweep image blobs", "err", err, "deleted", n)
		case n > 0:
			s.log.InfoContext(ctx, "deleted image blobs without a record", "count", n)
		}
	}
}
