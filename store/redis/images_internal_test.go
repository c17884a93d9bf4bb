package redis

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// An image record written as a hash (before records were strings of
// JSON) is still read, and so is one written now, with the same fields.
func TestImageRecordsOldAndNew(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, rdb := fundedStore(t, 10)
	created, expires := time.UnixMilli(1767312245000).UTC(), time.UnixMilli(1767315845000).UTC()
	is.NoErr(rdb.HSet(ctx, s.k.image("old"), "task", "t0", "owner", "a", "type", "image/png", "size", "12", "sum", "abc",
		"created", created.UnixMilli(), "expires", expires.UnixMilli()).Err())
	old, err := s.Image(ctx, "old")
	is.NoErr(err)
	is.Equal(*old, imagegen.Image{ID: "old", TaskID: "t0", Owner: "a", ContentType: "image/png", Size: 12, Checksum: "abc", CreatedAt: created, ExpiresAt: expires})

	c := claimedTask(t, s)
	img := imagegen.Image{ID: "new", TaskID: c.ID, Owner: "a", ContentType: `image/"png"`, Size: 34, Checksum: "déf"}
	is.NoErr(s.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{img}, nil))
	got, err := s.Image(ctx, "new")
	is.NoErr(err)
	is.True(!got.CreatedAt.IsZero())
	is.Equal(got.ExpiresAt, got.CreatedAt.Add(s.retention))
	img.CreatedAt, img.ExpiresAt = got.CreatedAt, got.ExpiresAt
	is.Equal(*got, img)
	ttl, err := rdb.PTTL(ctx, s.k.image("new")).Result()
	is.NoErr(err)
	is.True(ttl > s.retention-time.Minute && ttl <= s.retention)

	_, err = s.Image(ctx, "none")
	is.Equal(err, imagegen.ErrImageNotFound)
}
