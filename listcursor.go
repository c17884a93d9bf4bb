package imagegen

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ListCursorSecretName is the name of the shared secret
// (SecretStore.SharedSecret) that the cursors of ListTasks and ListLedger
// are sealed under, made by the first process that needs it. Every
// process on the store seals and opens with it, so a cursor one process
// gave another accepts. A Service reads it once and keeps it; given a
// cursor that does not open, it reads it again (at most once a second),
// so a secret replaced in the store (ReplaceSharedSecret) is taken up by
// every process at the first cursor sealed under the new one. Deleting or replacing it makes
// every cursor given so far refused (clients start again from the first
// page); after deleting it, restart the processes, so that none goes on
// sealing under the old one.
const ListCursorSecretName = "list-cursor"

// A listing is what a cursor pages through: the kind of list and whose
// it is. A cursor is sealed with its listing as associated data and
// opens only for the same one. The task list's status filter is not part
// of it: the store's cursor is a place in the owner's list, which any
// filter can continue from.
type listing struct {
	kind  string // "tasks" or "ledger"
	owner string
}

// associatedData encodes l unambiguously: each field length-prefixed.
func (l listing) associatedData() []byte {
	b := []byte("imagegen list cursor v1")
	for _, f := range []string{l.kind, l.owner} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

// listCursors seals and opens the cursors of one listing call with the
// Service's cursor key (cursorKeys).
type listCursors struct {
	s *Service
	l listing
}

func (s *Service) listCursors(l listing) listCursors { return listCursors{s: s, l: l} }

// cursorKeys is a Service's cursor sealer, made from the store's shared
// secret when first needed and kept, so that a listing costs the store
// no read of the secret. A cursor that does not open under the kept key
// makes it read the secret again (once a call): a secret deleted or
// replaced in the store is taken up at the next cursor that needs it.
//
// The kept sealer is read without a lock: a read of the secret (which
// may wait on a slow store, and which any client can cause with a
// cursor that does not open) holds up only the other calls that read
// it, never the listings that seal or open under the kept key. The
// reads take turns (reading), each waiting no longer than its context,
// and the store is read again at most once in cursorReread: cursors
// that do not open, which any client can send, cost the store a read a
// second at most, not one each.
type cursorKeys struct {
	cur     atomic.Pointer[cursorKey]
	reading chan struct{} // one read of the secret at a time (newCursorKeys makes it)
}

func newCursorKeys() *cursorKeys { return &cursorKeys{reading: make(chan struct{}, 1)} }

// cursorKey is a secret, the sealer made of it, and when it was read
// from the store (by the Service's clock).
type cursorKey struct {
	secret []byte
	sealer *cursorSealer
	readAt time.Time
}

// cursorReread is how often at most a Service reads the cursor key again
// for cursors that do not open under the one it keeps.
const cursorReread = time.Second

// get returns the sealer, reading the secret from store when there is
// none yet or when fresh asks for the store's current one.
func (k *cursorKeys) get(ctx context.Context, store SecretStore, clock Clock, fresh bool) (*cursorSealer, error) {
	if cur := k.cur.Load(); cur != nil && !fresh {
		return cur.sealer, nil
	}
	select {
	case k.reading <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("cursor key: %w", ctx.Err())
	}
	defer func() { <-k.reading }()
	now := clock.Now()
	if cur := k.cur.Load(); cur != nil && (!fresh || now.Sub(cur.readAt) < cursorReread) { // read by a call before
		return cur.sealer, nil
	}
	secret, err := store.SharedSecret(ctx, ListCursorSecretName, NewSecretKey)
	if err != nil {
		return nil, fmt.Errorf("cursor key: %w", err)
	}
	if cur := k.cur.Load(); cur != nil && bytes.Equal(secret, cur.secret) {
		k.cur.Store(&cursorKey{secret: cur.secret, sealer: cur.sealer, readAt: now})
		return cur.sealer, nil
	}
	sealer, err := newCursorSealer(secret)
	if err != nil {
		return nil, err
	}
	k.cur.Store(&cursorKey{secret: secret, sealer: &sealer, readAt: now})
	return &sealer, nil
}

func (c listCursors) key(ctx context.Context, fresh bool) (*cursorSealer, error) {
	sealer, err := c.s.cursorKeys.get(ctx, c.s.cfg.Store, c.s.cfg.Clock, fresh)
	if err != nil {
		return nil, fmt.Errorf("imagegen: list %s: %w", c.l.kind, err)
	}
	return sealer, nil
}

// open returns the store's cursor that cursor (one seal gave, or "" for
// the first page) stands for. A cursor that does not open for this
// listing is the caller's mistake: errBadCursor.
func (c listCursors) open(ctx context.Context, cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	sealer, err := c.key(ctx, false)
	if err != nil {
		return "", err
	}
	after, err := sealer.open(c.l.associatedData(), cursor)
	if errors.Is(err, errCursorSeal) { // sealed under a key the store holds now?
		if sealer, err = c.key(ctx, true); err != nil {
			return "", err
		}
		after, err = sealer.open(c.l.associatedData(), cursor)
	}
	if errors.Is(err, errCursorSeal) {
		return "", errBadCursor()
	}
	return after, err
}

// seal returns the cursor to hand out for the store's cursor next (""
// for the last page stays "").
func (c listCursors) seal(ctx context.Context, next string) (string, error) {
	if next == "" {
		return "", nil
	}
	sealer, err := c.key(ctx, false)
	if err != nil {
		return "", err
	}
	sealed, err := sealer.seal(c.l.associatedData(), next)
	if err == nil && len(sealed) > maxCursorLen {
		err = fmt.Errorf("the sealed cursor is %d characters, more than a cursor may be", len(sealed))
	}
	if err != nil {
		return "", fmt.Errorf("imagegen: list %s: %w", c.l.kind, err)
	}
	return sealed, nil
}
