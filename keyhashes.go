package imagegen

import (
	"crypto/subtle"
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// keyHashes remembers the hashes (HashAPIKey) of recently presented API
// keys, so that a caller's requests hash their key once, not once each.
// It holds hashes only: every Authenticate still reads the key's record
// by its hash from the store, so a revoked key is refused at once, as
// without it. A fixed number of slots, picked by a seeded hash of the key,
// each holds the last key seen there; keys are compared in constant time.
type keyHashes struct {
	seed  maphash.Seed
	slots [256]atomic.Pointer[keyHash]
}

type keyHash struct{ key, hash string }

func newKeyHashes() *keyHashes { return &keyHashes{seed: maphash.MakeSeed()} }

// of returns HashAPIKey(key).
func (c *keyHashes) of(key string) string {
	slot := &c.slots[maphash.String(c.seed, key)%uint64(len(c.slots))]
	if e := slot.Load(); e != nil && len(e.key) == len(key) && subtle.ConstantTimeCompare([]byte(e.key), []byte(key)) == 1 {
		return e.hash
	}
	e := &keyHash{key: strings.Clone(key), hash: HashAPIKey(key)} // the clone: key may point into a request's buffers
	slot.Store(e)
	return e.hash
}
