package imagegen

import (
	"crypto/rand"
	"hash/fnv"

	"github.com/google/uuid"
)

// NewOwnedID returns a new id for a task or an image of owner: a UUID
// (version 8, RFC 9562, the version for ids of an application's own
// layout) whose first 16 bits are OwnerMark(owner) and whose other 106
// bits are random. A store that spreads owners over shards (the Redis
// store on a Cluster) finds a task's or an image's shard from its id
// alone (IDOwnerMark), without a lookup. The mark says nothing about the
// owner but which of 65,536 groups it hashes into.
func NewOwnedID(owner string) string {
	var b uuid.UUID
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	mark := OwnerMark(owner)
	b[0], b[1] = byte(mark>>8), byte(mark)
	b[6] = b[6]&0x0f | 0x80 // version 8
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return b.String()
}

// OwnerMark is the 16-bit hash (FNV-1a, folded) of an owner that
// NewOwnedID puts in its ids.
func OwnerMark(owner string) uint16 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(owner))
	sum := h.Sum32()
	return uint16(sum>>16) ^ uint16(sum)
}

// IDOwnerMark returns the owner mark of an id made by NewOwnedID, and
// false for any other id (a UUID of another version, or not a UUID).
func IDOwnerMark(id string) (uint16, bool) {
	if len(id) != 36 {
		return 0, false
	}
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 8 || u.Variant() != uuid.RFC4122 {
		return 0, false
	}
	return uint16(u[0])<<8 | uint16(u[1]), true
}
