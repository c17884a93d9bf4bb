package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobkit"
	"github.com/imagegen/imagegen/internal/chunked"
	"github.com/imagegen/imagegen/internal/groupcommit"
)

// blobs is the store's default BlobStore: image bytes in the blobs table
// of the store's schema, so that a deployment on PostgreSQL alone keeps
// its pictures as durably as its balances. Large volumes belong in object
// storage (Config.Blobs with blob/s3).
type blobs struct{ s *Store }

var (
	_ imagegen.BlobStore       = blobs{}
	_ imagegen.BlobRangeReader = blobs{}
)

// Blobs returns the BlobStore of the store's images: Config.Blobs, or the
// blobs table of its schema.
func (s *Store) Blobs() imagegen.BlobStore {
	if s.blobStore != nil {
		return s.blobStore
	}
	return blobs{s: s}
}

// Put stores exactly size bytes from r under key, replacing what was
// there.
func (b blobs) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return err
	}
	data, err := blobkit.Read(key, r, size)
	if err != nil {
		return fmt.Errorf("postgres blobs: put %s: %w", key, err)
	}
	_, err = b.s.blobPuts.Do(ctx, blobPut{key: key, data: data, contentType: contentType})
	return err
}

// blobPut is one Put waiting for its batch.
type blobPut struct {
	key, contentType string
	data             []byte
}

type blobPutCall = groupcommit.Call[blobPut, struct{}]

// blobUpsert ends an INSERT INTO blobs (key, data, content_type,
// written_at): a key written again takes the new bytes (putBlobsSQL, and
// completeSQL's bytes of a success).
const blobUpsert = `ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data, content_type = EXCLUDED.content_type, written_at = EXCLUDED.written_at`

// putBlobsSQL writes a batch of blobs in one statement.
//
//	$1 now  $2 keys  $3 data  $4 content types
const putBlobsSQL = `WITH async AS (
	SELECT set_config('synchronous_commit', 'off', true)
)
INSERT INTO {schema}.blobs (key, data, content_type, written_at)
	SELECT k, d, c, {now} FROM unnest($2::text[], $3::bytea[], $4::text[]) AS b(k, d, c), async
	` + blobUpsert

// putBlobBatch writes the Puts that arrived together in one statement
// and one commit (group commit, as for submits and successes), keys in
// order so that concurrent batches lock rows in one order. A batch that
// fails as a whole (the same key twice in it) runs again one Put at a
// time, so that only a bad one fails.
func (s *Store) putBlobBatch(ctx context.Context, batch []*blobPutCall) {
	sort.Slice(batch, func(i, j int) bool { return batch[i].Req.key < batch[j].Req.key })
	keys := make([]string, len(batch))
	data := make([][]byte, len(batch))
	types := make([]string, len(batch))
	for i, c := range batch {
		keys[i], data[i], types[i] = c.Req.key, c.Req.data, c.Req.contentType
	}
	_, err := s.pool.Exec(ctx, s.sql(putBlobsSQL), s.nowArg(), keys, data, types)
	if err != nil && len(batch) > 1 {
		for _, c := range batch {
			s.putBlobBatch(ctx, []*blobPutCall{c})
		}
		return
	}
	for _, c := range batch {
		c.Err = s.wrapErr("put blob", err)
	}
}

// Open returns the blob; its Body reads it a chunk at a time
// (substring() of blobChunk bytes per query, from where it was sought
// to), so a download never holds a whole image in this process. The
// first chunk comes with the blob's size and time in one query, so an
// image of up to blobChunk bytes is one round trip.
func (b blobs) Open(ctx context.Context, key string) (*imagegen.Blob, error) {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return nil, err
	}
	info := imagegen.BlobInfo{Key: key}
	var first []byte
	err := b.s.pool.QueryRow(ctx, b.s.sql(`SELECT octet_length(data), written_at, substring(data from 1 for $2) FROM {schema}.blobs WHERE key = $1`),
		key, blobChunk).Scan(&info.Size, &info.ModTime, &first)
	if err != nil {
		return nil, b.notFound(key, err)
	}
	info = withValidator(info)
	return &imagegen.Blob{BlobInfo: info, Body: b.reader(ctx, key, info.Size, 0, info.Size, first)}, nil
}

// ReadRange reads n bytes of the blob from off: the first chunk comes
// with the blob's length in one query, the rest a chunk per query.
func (b blobs) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return nil, err
	}
	if !imagegen.RangeFits(off, n, math.MaxInt64) { // no blob is that long
		return nil, imagegen.RangePastEnd(key, off, n, -1)
	}
	var size int64
	var first []byte
	err := b.s.pool.QueryRow(ctx, b.s.sql(`SELECT octet_length(data), substring(data from $2 for $3) FROM {schema}.blobs WHERE key = $1`),
		key, off+1, min(n, blobChunk)).Scan(&size, &first)
	if err != nil {
		return nil, b.notFound(key, err)
	}
	if !imagegen.RangeFits(off, n, size) {
		return nil, imagegen.RangePastEnd(key, off, n, size)
	}
	return b.reader(ctx, key, size, off, off+n, first), nil
}

// blobChunk is the most one query of a blob's reader fetches.
const blobChunk = 256 << 10

// reader reads bytes [off, end) of the blob, first being those fetched
// already from off on.
func (b blobs) reader(ctx context.Context, key string, size, off, end int64, first []byte) *chunked.Reader[[]byte] {
	q := b.s.sql(`SELECT substring(data from $2 for $3) FROM {schema}.blobs WHERE key = $1`)
	return chunked.New(ctx, chunked.Config[[]byte]{
		What: "postgres blobs: read " + key, Chunk: blobChunk, Size: size, Off: off, End: end, First: first,
		Fetch: func(ctx context.Context, off, n int64) ([]byte, error) {
			var data []byte
			err := b.s.pool.QueryRow(ctx, q, key, off+1, n).Scan(&data)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil, nil // deleted meanwhile: the reader reports it
			}
			b.s.resets.Note(err)
			return data, err
		},
	})
}

// Stat reads the blob's size and time, not its bytes (octet_length of a
// stored bytea reads its header only).
func (b blobs) Stat(ctx context.Context, key string) (imagegen.BlobInfo, error) {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return imagegen.BlobInfo{}, err
	}
	info := imagegen.BlobInfo{Key: key}
	err := b.s.pool.QueryRow(ctx, b.s.sql(`SELECT octet_length(data), written_at FROM {schema}.blobs WHERE key = $1`), key).
		Scan(&info.Size, &info.ModTime)
	if err != nil {
		return imagegen.BlobInfo{}, b.notFound(key, err)
	}
	return withValidator(info), nil
}

// withValidator sets info's ModTime in UTC and its ETag: the time it was
// written (to the microsecond, as the table keeps it) and its size, as
// blob/file and blob/redis make theirs. Every write sets written_at anew,
// so new bytes get a new validator (but for a rewrite of the same size in
// the same microsecond of the store's clock: keys are image ids, written
// once) without the store reading them: an
// ETag of their checksum (md5(data), as before) read the whole of every
// blob at each Open and Stat, and of 500 blobs a page in List (the
// sweep's). Image downloads send the image record's SHA-256 as their
// ETag, not this one.
func withValidator(info imagegen.BlobInfo) imagegen.BlobInfo {
	info.ModTime = info.ModTime.UTC()
	info.ETag = `"` + strconv.FormatInt(info.ModTime.UnixMicro(), 36) + "-" + strconv.FormatInt(info.Size, 36) + `"`
	return info
}

// Delete removes the blob; a missing one is not an error.
func (b blobs) Delete(ctx context.Context, key string) error {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return err
	}
	_, err := b.s.pool.Exec(ctx, b.s.sql(`DELETE FROM {schema}.blobs WHERE key = $1`), key)
	return b.s.wrapErr("delete blob", err)
}

// listPage bounds the rows one List query reads.
const listPage = 500

// List calls fn for every blob, in key order, a page at a time (no
// transaction is held while fn runs).
func (b blobs) List(ctx context.Context, fn func(imagegen.BlobInfo) error) error {
	after := ""
	for {
		page, err := queryRows(ctx, b.s, "list blobs", scanBlobInfo, `SELECT key, octet_length(data), written_at FROM {schema}.blobs
			WHERE key > $1 ORDER BY key LIMIT $2`, after, listPage)
		if err != nil {
			return err
		}
		for _, info := range page {
			if err := fn(info); err != nil {
				return err
			}
		}
		if len(page) < listPage {
			return nil
		}
		after = page[len(page)-1].Key
	}
}

func (b blobs) notFound(key string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres blobs: %s: %w", key, imagegen.ErrBlobNotFound)
	}
	return b.s.wrapErr("blob", err)
}

// scanBlobInfo reads a row of key, size and written_at.
func scanBlobInfo(row pgx.CollectableRow) (imagegen.BlobInfo, error) {
	var info imagegen.BlobInfo
	err := row.Scan(&info.Key, &info.Size, &info.ModTime)
	return withValidator(info), err
}
