package imagegen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// ListCursorSecretName is the name of the shared secret
// (SecretStore.SharedSecret) that the cursors of ListTasks and ListLedger
// are sealed under, made by the first process that needs it. Every
// process on the store seals and opens with it, so a cursor one process
// gave another accepts. Deleting it from the store makes every cursor
// given so far refused (clients start again from the first page).
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

// listCursors seals and opens the cursors of one listing call, reading
// the sealing key from the store when first needed (a first page
// without a next one needs none).
type listCursors struct {
	s      *Service
	l      listing
	sealer *cursorSealer
}

func (s *Service) listCursors(l listing) *listCursors { return &listCursors{s: s, l: l} }

func (c *listCursors) key(ctx context.Context) (*cursorSealer, error) {
	if c.sealer != nil {
		return c.sealer, nil
	}
	secret, err := c.s.cfg.Store.SharedSecret(ctx, ListCursorSecretName, NewSecretKey)
	if err != nil {
		return nil, fmt.Errorf("imagegen: list %s: cursor key: %w", c.l.kind, err)
	}
	sealer, err := newCursorSealer(secret)
	if err != nil {
		return nil, fmt.Errorf("imagegen: list %s: %w", c.l.kind, err)
	}
	c.sealer = &sealer
	return c.sealer, nil
}

// open returns the store's cursor that cursor (one seal gave, or "" for
// the first page) stands for. A cursor that does not open for this
// listing is the caller's mistake: errBadCursor.
func (c *listCursors) open(ctx context.Context, cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	sealer, err := c.key(ctx)
	if err != nil {
		return "", err
	}
	after, err := sealer.open(c.l.associatedData(), cursor)
	if errors.Is(err, errCursorSeal) {
		return "", errBadCursor()
	}
	return after, err
}

// seal returns the cursor to hand out for the store's cursor next (""
// for the last page stays "").
func (c *listCursors) seal(ctx context.Context, next string) (string, error) {
	if next == "" {
		return "", nil
	}
	sealer, err := c.key(ctx)
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
