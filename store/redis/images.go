package redis

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
)

// BlobStore keeps image bytes. The store keeps each image's record (its
// task, content type and expiry) itself and hands only the bytes to the
// BlobStore, so an operator can put them in S3, GCS or on disk.
type BlobStore interface {
	// Put stores data under id for at least ttl.
	Put(ctx context.Context, id string, data []byte, ttl time.Duration) error
	// Get returns the data, or imagegen.ErrImageNotFound.
	Get(ctx context.Context, id string) ([]byte, error)
	// Delete removes the data; a missing id is not an error.
	Delete(ctx context.Context, id string) error
}

// redisBlobs is the default BlobStore: bytes in Redis, with a TTL.
type redisBlobs struct {
	rdb goredis.UniversalClient
	k   keys
}

func (b *redisBlobs) Put(ctx context.Context, id string, data []byte, ttl time.Duration) error {
	return wrapErr("put image", b.rdb.Set(ctx, b.k.blob(id), data, ttl).Err())
}

func (b *redisBlobs) Get(ctx context.Context, id string) ([]byte, error) {
	data, err := b.rdb.Get(ctx, b.k.blob(id)).Bytes()
	if isNil(err) {
		return nil, imagegen.ErrImageNotFound
	}
	return data, wrapErr("get image", err)
}

func (b *redisBlobs) Delete(ctx context.Context, id string) error {
	return wrapErr("delete image", b.rdb.Del(ctx, b.k.blob(id)).Err())
}

// Image returns a stored image: its record from Redis, its bytes from
// the BlobStore.
func (s *Store) Image(ctx context.Context, id string) (*imagegen.Image, error) {
	f, err := s.rdb.HGetAll(ctx, s.k.image(id)).Result()
	if err != nil {
		return nil, wrapErr("image", err)
	}
	if len(f) == 0 || s.expired(atoi(f["expires"])) {
		return nil, imagegen.ErrImageNotFound
	}
	data, err := s.blobs.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return &imagegen.Image{
		ID:          id,
		TaskID:      f["task"],
		ContentType: f["type"],
		Data:        data,
		ExpiresAt:   msTime(f["expires"]),
	}, nil
}
