package imagegen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"
)

// webhookKeys is an owner's webhook signing keys, kept in the store as
// one shared secret ("webhook:<owner>") so that a rotation replaces them
// all in one compare-and-swap.
//
// A secret never rotated is stored as the bare key (NewSecretKey's 32
// bytes), as it always was. A rotated one is stored as
//
//	"whk1" | previousUntil (Unix ms, 8 bytes big-endian) | len(current) (1 byte) | current | previous
//
// which is never 32 bytes long.
type webhookKeys struct {
	current       []byte
	previous      []byte    // nil: never rotated
	previousUntil time.Time // deliveries are signed with previous too until then
}

const (
	webhookKeysMagic = "whk1"
	bareKeyLen       = 32 // NewSecretKey's
)

var errWebhookKeys = errors.New("the stored webhook secret is neither a key nor a rotation")

func (k webhookKeys) encode() []byte {
	b := make([]byte, 0, len(webhookKeysMagic)+8+1+len(k.current)+len(k.previous))
	b = append(b, webhookKeysMagic...)
	b = binary.BigEndian.AppendUint64(b, uint64(k.previousUntil.UnixMilli()))
	b = append(b, byte(len(k.current)))
	b = append(b, k.current...)
	return append(b, k.previous...)
}

func decodeWebhookKeys(raw []byte) (webhookKeys, error) {
	if len(raw) == bareKeyLen {
		return webhookKeys{current: raw}, nil
	}
	rest, ok := bytes.CutPrefix(raw, []byte(webhookKeysMagic))
	if !ok || len(rest) < 9 {
		return webhookKeys{}, errWebhookKeys
	}
	until := time.UnixMilli(int64(binary.BigEndian.Uint64(rest))).UTC()
	n := int(rest[8])
	rest = rest[9:]
	if n == 0 || len(rest) <= n {
		return webhookKeys{}, errWebhookKeys
	}
	return webhookKeys{current: rest[:n], previous: rest[n:], previousUntil: until}, nil
}
