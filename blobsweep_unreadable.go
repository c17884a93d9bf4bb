package imagegen

import "sync"

// maxUnreadableBlobs bounds how many blobs whose records could not be
// read a Service remembers between sweeps (unreadableBlobs): about a
// megabyte of keys. Past it, new ones are not remembered, and the sweeps
// end at the same place again once more than that many (plus
// maxSweepLookupErrors) records cannot be read.
const maxUnreadableBlobs = 10_000

// unreadableBlobs are the keys of blobs whose records SweepBlobs could
// not read, kept until a sweep goes through the whole listing. A sweep
// keeps them without reading their records again, so that its
// maxSweepLookupErrors failures are new ones: each sweep goes further
// than the last past a run of unreadable records, instead of ending at
// the same ones every time. Safe for sweeps at once; the zero value is
// empty.
type unreadableBlobs struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

// has reports whether key's record could not be read in an earlier sweep.
func (u *unreadableBlobs) has(key string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.keys[key]
	return ok
}

// add remembers key, unless maxUnreadableBlobs are already remembered.
func (u *unreadableBlobs) add(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.keys == nil {
		u.keys = make(map[string]struct{})
	}
	if len(u.keys) < maxUnreadableBlobs {
		u.keys[key] = struct{}{}
	}
}

// forget drops them all: a sweep went through the listing, and the next
// reads their records again (a store that failed for a while may read
// them now).
func (u *unreadableBlobs) forget() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.keys = nil
}
