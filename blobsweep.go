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
//
// A blob whose record cannot be read (the store failing on it, or a
// record the store cannot decode) is kept, and the sweep goes on past it:
// else one bad record would end every sweep at the same blob, and the
// bytes listed after it would never go. After 100 such blobs the sweep
// ends (the store is likely down). The error wraps the first lookup's.
// The Service remembers those blobs (up to 10,000) and the next sweeps
// keep them without reading their records again, so each sweep's 100 are
// new ones and it goes on further than the last: the orphans listed
// after more than 100 unreadable records are still deleted. Once a
// sweep goes through the whole listing, the next reads them all again;
// a sweep that kept remembered blobs logs how many.
func (s *Service) SweepBlobs(ctx context.Context) (int, error) {
	blobs := s.blobs
	cutoff := s.cfg.Clock.Now().Add(-s.cfg.OrphanGrace)
	deleted, failed, skipped := 0, 0, 0
	var lookupErr error
	err := blobs.List(ctx, func(b BlobInfo) error {
		if b.ModTime.After(cutoff) {
			return nil
		}
		if s.unreadable.has(b.Key) {
			skipped++
			return nil // kept: read again once a sweep has gone through the listing
		}
		_, err := s.cfg.Store.Image(ctx, b.Key)
		switch {
		case err == nil: // the record is live
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !errors.Is(err, ErrImageNotFound):
			failed++
			s.unreadable.add(b.Key)
			if lookupErr == nil {
				lookupErr = fmt.Errorf("read the record of blob %s: %w", b.Key, err)
			}
			if failed >= maxSweepLookupErrors {
				return errSweepLookups
			}
			return nil // kept: its record may be live
		}
		if err := blobs.Delete(ctx, b.Key); err != nil {
			return err
		}
		deleted++
		return nil
	})
	if skipped > 0 {
		s.log.WarnContext(ctx, "sweep image blobs: kept blobs whose records could not be read in an earlier sweep, not read again",
			"count", skipped, "deleted", deleted)
	}
	if err == nil {
		s.unreadable.forget() // through the listing: the next sweep reads them again
	}
	switch {
	case errors.Is(err, errSweepLookups):
		return deleted, fmt.Errorf("imagegen: sweep blobs: stopped after %d records could not be read: %w", failed, lookupErr)
	case err != nil:
		return deleted, fmt.Errorf("imagegen: sweep blobs: %w", err)
	case lookupErr != nil:
		return deleted, fmt.Errorf("imagegen: sweep blobs: %d records could not be read, their blobs kept: %w", failed, lookupErr)
	}
	return deleted, nil
}

// maxSweepLookupErrors is how many records a sweep may fail to read
// before it ends.
const maxSweepLookupErrors = 100

// errSweepLookups ends a sweep's listing after maxSweepLookupErrors.
var errSweepLookups = errors.New("too many records could not be read")

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
