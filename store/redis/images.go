package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
)

// Image returns an image's record: a string of JSON (imageRecord), or a
// hash of the same fields for a record written before those strings.
func (s *Store) Image(ctx context.Context, id string) (*imagegen.Image, error) {
	key := s.byID(id).image(id)
	raw, err := s.rdb.Get(ctx, key).Result()
	switch {
	case isNil(err):
		return nil, imagegen.ErrImageNotFound
	case goredis.HasErrorPrefix(err, "WRONGTYPE"):
		return s.imageHash(ctx, id, key)
	case err != nil:
		return nil, wrapErr("image", err)
	}
	var r imageRecord
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil, fmt.Errorf("redis store: image %s: %w", id, err)
	}
	if s.expired(r.Expires) {
		return nil, imagegen.ErrImageNotFound
	}
	return &imagegen.Image{
		ID:          id,
		TaskID:      r.Task,
		Owner:       r.Owner,
		ContentType: r.Type,
		Size:        r.Size,
		Checksum:    r.Sum,
		CreatedAt:   fromMS(r.Created),
		ExpiresAt:   fromMS(r.Expires),
	}, nil
}

// imageHash reads an image record kept as a hash (written before the
// records were strings).
func (s *Store) imageHash(ctx context.Context, id, key string) (*imagegen.Image, error) {
	f, err := s.liveHash(ctx, key, "image", imagegen.ErrImageNotFound)
	if err != nil {
		return nil, err
	}
	return &imagegen.Image{
		ID:          id,
		TaskID:      f["task"],
		Owner:       f["owner"],
		ContentType: f["type"],
		Size:        atoi(f["size"]),
		Checksum:    f["sum"],
		CreatedAt:   msTime(f["created"]),
		ExpiresAt:   msTime(f["expires"]),
	}, nil
}

// imageRecord is an image's record as stored: JSON, times in Unix ms.
type imageRecord struct {
	Task    string `json:"task"`
	Owner   string `json:"owner"`
	Type    string `json:"type"`
	Size    int64  `json:"size"`
	Sum     string `json:"sum"`
	Created int64  `json:"created"`
	Expires int64  `json:"expires"`
}

// imageRecordHead is the JSON of img's record (of task) up to its
// times, which the complete script appends: `...,"created":` then the
// time, `,"expires":`, the expiry and `}`.
func imageRecordHead(task string, img imagegen.Image) string {
	var b strings.Builder
	// One allocation: the fields, their quotes and names, and the size.
	b.Grow(len(task) + len(img.Owner) + len(img.ContentType) + len(img.Checksum) + 80)
	b.WriteString(`{"task":`)
	writeJSONString(&b, task)
	b.WriteString(`,"owner":`)
	writeJSONString(&b, img.Owner)
	b.WriteString(`,"type":`)
	writeJSONString(&b, img.ContentType)
	b.WriteString(`,"size":`)
	b.WriteString(strconv.FormatInt(img.Size, 10))
	b.WriteString(`,"sum":`)
	writeJSONString(&b, img.Checksum)
	b.WriteString(`,"created":`)
	return b.String()
}

// writeJSONString writes s as a JSON string: by hand when no byte of it
// needs escaping (ids, content types and checksums never do), else
// through encoding/json.
func writeJSONString(b *strings.Builder, s string) {
	if !plainJSON(s) {
		q, _ := json.Marshal(s) // a string always encodes
		b.Write(q)
		return
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

// plainJSON reports whether encoding/json writes s as it is between
// quotes: printable ASCII without '"', '\\', or the '<', '>' and '&' that
// it escapes for HTML.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Blobs returns the store of image bytes (Config.Blobs).
func (s *Store) Blobs() imagegen.BlobStore { return s.blobs }
