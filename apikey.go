package imagegen

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen/internal/pgtext"
)

// API keys that the service makes look like
//
//	igk_<32 random base62 characters><6 base62 characters of CRC-32>
//
// The prefix makes them easy to spot (and to scan for in leaked code);
// the checksum lets a mistyped or made-up key be refused without a store
// lookup. Only the SHA-256 of a key is stored. Keys that an operator
// imports (ImportKey, `-demo-key`) may have any form of at least
// MinImportedKeyLength characters.
const (
	APIKeyPrefix         = "igk_"
	MinImportedKeyLength = 16
	MaxAPIKeyLength      = 256

	keyRandomChars   = 32 // about 190 bits
	keyChecksumChars = 6
	generatedKeyLen  = len(APIKeyPrefix) + keyRandomChars + keyChecksumChars
	base62           = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// NewAPIKey returns a fresh random key with prefix and checksum.
func NewAPIKey() string {
	var b [keyRandomChars]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	body := make([]byte, 0, generatedKeyLen)
	body = append(body, APIKeyPrefix...)
	for _, c := range b {
		body = append(body, base62[int(c)%len(base62)]) // 256 % 62 bias is irrelevant at 190 bits
	}
	sum := keyChecksum(string(body[len(APIKeyPrefix):]))
	body = append(body, sum[:]...)
	return string(body)
}

// keyChecksum is the checksum characters of a key's random part: its
// CRC-32 (IEEE) in base62. It reads the string itself, so that checking
// a key on each request allocates nothing.
func keyChecksum(random string) [keyChecksumChars]byte {
	crc := ^uint32(0)
	for i := 0; i < len(random); i++ {
		crc = crc32.IEEETable[byte(crc)^random[i]] ^ crc>>8
	}
	sum := ^crc
	var out [keyChecksumChars]byte
	for i := keyChecksumChars - 1; i >= 0; i-- {
		out[i] = base62[sum%62]
		sum /= 62
	}
	return out
}

// CheckAPIKeyFormat refuses, without any lookup, a key that cannot be
// valid: empty, too long, or carrying our prefix with a bad checksum.
// The error wraps ErrUnauthorized.
func CheckAPIKeyFormat(key string) error {
	switch {
	case len(key) > MaxAPIKeyLength:
		return fmt.Errorf("key too long: %w", ErrUnauthorized)
	case strings.HasPrefix(key, APIKeyPrefix):
		if len(key) != generatedKeyLen {
			return fmt.Errorf("key has the wrong length: %w", ErrUnauthorized)
		}
		random, sum := key[len(APIKeyPrefix):generatedKeyLen-keyChecksumChars], key[generatedKeyLen-keyChecksumChars:]
		if want := keyChecksum(random); subtle.ConstantTimeCompare(want[:], []byte(sum)) != 1 {
			return fmt.Errorf("key checksum mismatch: %w", ErrUnauthorized)
		}
	case len(key) < MinImportedKeyLength:
		return fmt.Errorf("key too short: %w", ErrUnauthorized)
	}
	return nil
}

// HashAPIKey returns the hex SHA-256 of key, the only form that is stored.
func HashAPIKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:]) // one allocation: it runs on every request
}

// keyHint is the part of a key shown in lists: enough to tell keys apart,
// never enough to matter.
func keyHint(key string) string {
	n := 8
	if !strings.HasPrefix(key, APIKeyPrefix) {
		n = min(4, len(key)/4)
	}
	return key[:n] + "…"
}

// MaxKeyNameChars bounds the name of an API key.
const MaxKeyNameChars = 100

// KeyOption adjusts a key that CreateKey makes.
type KeyOption func(*APIKey)

// WithKeyName labels the key ("laptop", "CI") so that its owner can tell
// keys apart in a list. The name is at most MaxKeyNameChars characters of
// valid UTF-8 without control characters; surrounding spaces are trimmed.
func WithKeyName(name string) KeyOption {
	return func(k *APIKey) { k.Name = strings.TrimSpace(name) }
}

// CreateKey makes a new key for owner and stores its hash. The key is
// returned once, here; it cannot be read back later. Options (WithKeyName)
// label the key.
func (s *Service) CreateKey(ctx context.Context, owner string, opts ...KeyOption) (string, APIKey, error) {
	var labels APIKey
	for _, o := range opts {
		o(&labels)
	}
	if err := checkKeyName(labels.Name); err != nil {
		return "", APIKey{}, err
	}
	if err := checkOwner(owner); err != nil { // before checkKeyCount, which asks the store about owner
		return "", APIKey{}, err
	}
	if err := s.checkKeyCount(ctx, owner); err != nil {
		return "", APIKey{}, err
	}
	key := NewAPIKey()
	rec, err := s.putKey(ctx, owner, key, labels.Name)
	return key, rec, err
}

// DefaultMaxKeysPerOwner is Config.MaxKeysPerOwner's default.
const DefaultMaxKeysPerOwner = 20

// checkKeyCount refuses a new key when owner already holds
// Config.MaxKeysPerOwner unrevoked ones. Two creates at the same moment
// may both pass it: the bound is exceeded by at most the number of
// concurrent creates, which is enough to stop a client from piling up
// keys.
func (s *Service) checkKeyCount(ctx context.Context, owner string) error {
	limit := s.cfg.MaxKeysPerOwner
	if limit < 0 || owner == "" {
		return nil
	}
	keys, err := s.cfg.Store.Keys(ctx, owner)
	if err != nil {
		return fmt.Errorf("imagegen: count keys: %w", err)
	}
	active := 0
	for _, k := range keys {
		if !k.Revoked {
			active++
		}
	}
	if active >= limit {
		return invalid("keys", "at most %d API keys may be active at once; revoke one first", limit)
	}
	return nil
}

func checkKeyName(name string) error {
	if !utf8.ValidString(name) {
		return invalid("name", "must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(name); n > MaxKeyNameChars {
		return invalid("name", "must be at most %d characters (got %d)", MaxKeyNameChars, n)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return invalid("name", "must not contain control characters")
	}
	return nil
}

// ImportKey stores an operator-chosen key (at least 16 characters) for
// owner, for demos and migrations.
func (s *Service) ImportKey(ctx context.Context, owner, key string) (APIKey, error) {
	if len(key) < MinImportedKeyLength || len(key) > MaxAPIKeyLength || strings.ContainsAny(key, " \t\r\n") {
		return APIKey{}, invalid("key", "must be %d to %d characters without white space", MinImportedKeyLength, MaxAPIKeyLength)
	}
	if err := CheckAPIKeyFormat(key); err != nil {
		return APIKey{}, invalid("key", "starts with %q but is not a valid generated key", APIKeyPrefix)
	}
	return s.putKey(ctx, owner, key, "")
}

// checkOwner refuses an owner that no key or ledger entry may have:
// empty, or one PostgreSQL cannot store (Submit refuses it too), so that
// no key is made for an owner who could never be given credits.
func checkOwner(owner string) error {
	switch {
	case owner == "":
		return invalid("owner", "is required")
	case !pgtext.Storable(owner):
		return invalid("owner", notStorable)
	}
	return nil
}

func (s *Service) putKey(ctx context.Context, owner, key, name string) (APIKey, error) {
	if err := checkOwner(owner); err != nil {
		return APIKey{}, err
	}
	rec := APIKey{
		ID:        "key_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16],
		Owner:     owner,
		Hash:      HashAPIKey(key),
		Hint:      keyHint(key),
		Name:      name,
		CreatedAt: s.cfg.Clock.Now().UTC(),
	}
	if err := s.cfg.Store.PutKey(ctx, rec); err != nil {
		return APIKey{}, fmt.Errorf("imagegen: put key: %w", err)
	}
	return rec, nil
}

// Authenticate returns the stored record of key (its ID and Owner). Every
// kind of bad key (missing, malformed, unknown, revoked) gives an error
// wrapping ErrUnauthorized.
func (s *Service) Authenticate(ctx context.Context, key string) (*APIKey, error) {
	if key == "" {
		return nil, fmt.Errorf("no key: %w", ErrUnauthorized)
	}
	if err := CheckAPIKeyFormat(key); err != nil {
		return nil, err
	}
	hash := s.keyHashes.Of(key) // the record is read every time: a revoked key is refused at once
	rec, err := s.cfg.Store.KeyByHash(ctx, hash)
	switch {
	case err == nil:
	case errors.Is(err, ErrKeyNotFound):
		return nil, fmt.Errorf("unknown key: %w", ErrUnauthorized)
	default:
		return nil, fmt.Errorf("imagegen: authenticate: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(hash)) != 1 || rec.Revoked {
		return nil, fmt.Errorf("unknown key: %w", ErrUnauthorized)
	}
	s.touchKey(ctx, rec)
	return rec, nil
}

// touchKey records the use of rec when its recorded last use is at least
// KeyUseGranularity old (by this process's clock; the store checks again
// by its own), so most requests write nothing. A failed write is logged,
// never an authentication failure: last use is for people to read.
func (s *Service) touchKey(ctx context.Context, rec *APIKey) {
	if s.cfg.Clock.Now().Sub(rec.LastUsedAt) < KeyUseGranularity {
		return
	}
	if err := s.cfg.Store.TouchKey(ctx, rec.Hash); err != nil && ctx.Err() == nil {
		s.log.WarnContext(ctx, "could not record the use of an API key", "key_id", rec.ID, "err", err)
	}
}

// Keys lists owner's keys (hashes and hints only), oldest first, each
// with its last use (APIKey.LastUsedAt, to within KeyUseGranularity).
func (s *Service) Keys(ctx context.Context, owner string) ([]APIKey, error) {
	ks, err := s.cfg.Store.Keys(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("imagegen: keys: %w", err)
	}
	return ks, nil
}

// RevokeKey revokes owner's key id; it stops working at once. The
// owner's oldest revoked keys beyond Config.RevokedKeysKept are then
// deleted; failing to delete them is logged, not returned (the revoke
// itself succeeded, and the next one tries again).
func (s *Service) RevokeKey(ctx context.Context, owner, id string) error {
	if !pgtext.Storable(id) { // no key's id; PostgreSQL refuses it as an argument
		return fmt.Errorf("imagegen: revoke key: %w", ErrKeyNotFound)
	}
	if err := s.cfg.Store.RevokeKey(ctx, owner, id); err != nil {
		return fmt.Errorf("imagegen: revoke key: %w", err)
	}
	if err := s.deleteOldRevokedKeys(ctx, owner); err != nil {
		s.cfg.Logger.WarnContext(ctx, "imagegen: delete old revoked keys", "owner", owner, "err", err)
	}
	return nil
}

// DefaultRevokedKeysKept is Config.RevokedKeysKept's default.
const DefaultRevokedKeysKept = 20

// deleteOldRevokedKeys deletes the owner's oldest revoked keys beyond
// Config.RevokedKeysKept.
func (s *Service) deleteOldRevokedKeys(ctx context.Context, owner string) error {
	keep := s.cfg.RevokedKeysKept
	if keep < 0 {
		return nil
	}
	keys, err := s.cfg.Store.Keys(ctx, owner)
	if err != nil {
		return err
	}
	revoked := slices.DeleteFunc(keys, func(k APIKey) bool { return !k.Revoked })
	if len(revoked) <= keep {
		return nil
	}
	slices.SortStableFunc(revoked, func(a, b APIKey) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, k := range revoked[:len(revoked)-keep] {
		if err := s.cfg.Store.DeleteKey(ctx, owner, k.ID); err != nil && !errors.Is(err, ErrKeyNotFound) {
			return err // ErrKeyNotFound: a concurrent revoke deleted it first
		}
	}
	return nil
}
