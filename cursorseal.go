package imagegen

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
)

// cursorSealer seals a store's list cursor into the opaque one the
// Service hands out, and opens it again. The construction is
// deterministic authenticated encryption in the SIV manner: the nonce is
// an HMAC-SHA256 of the associated data and the plaintext (truncated to
// AES-GCM's 12 bytes), and AES-256-GCM encrypts and authenticates under
// it. The sealed cursor is
//
//	base64url, no padding ( nonce (12) | GCM ciphertext and tag )
//
// over a plaintext that hides the store cursor's length to a block:
//
//	len(store cursor) (2 bytes big-endian) | store cursor | zeros to a multiple of cursorBlock
//
// Deterministic rather than with random nonces: the same store cursor
// of the same listing seals to the same text, so a nonce is only ever
// shared by identical messages, however many pages are listed under one
// key (random 96-bit nonces would collide, breaking GCM, after about 2^32
// cursors). Equal cursors tell a client only that it is at the same place
// in its own list, which it knows.
type cursorSealer struct {
	aead cipher.AEAD
	mac  []byte // the HMAC key the nonce is made with
}

const (
	// cursorBlock is what a sealed store cursor is padded to a multiple
	// of: a decimal sequence number (at most 20 digits) always fills one
	// block, so its number of digits does not show.
	cursorBlock = 32
	// cursorNonce is AES-GCM's standard nonce size.
	cursorNonce = 12
)

// errCursorSeal is a cursor that does not open: not base64url, cut,
// altered, sealed for another listing or under another key.
var errCursorSeal = errors.New("the cursor does not open")

// newCursorSealer derives the sealer's keys from secret (the shared
// secret ListCursorSecretName names) with HKDF-SHA256.
func newCursorSealer(secret []byte) (cursorSealer, error) {
	encKey, err := hkdf.Key(sha256.New, secret, nil, "imagegen list cursor: AES-256-GCM key", 32)
	if err != nil {
		return cursorSealer{}, fmt.Errorf("derive the cursor key: %w", err)
	}
	macKey, err := hkdf.Key(sha256.New, secret, nil, "imagegen list cursor: nonce HMAC key", 32)
	if err != nil {
		return cursorSealer{}, fmt.Errorf("derive the cursor nonce key: %w", err)
	}
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return cursorSealer{}, fmt.Errorf("cursor cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return cursorSealer{}, fmt.Errorf("cursor cipher: %w", err)
	}
	return cursorSealer{aead: aead, mac: macKey}, nil
}

// seal returns the opaque cursor for the store cursor plain, bound to ad.
func (c cursorSealer) seal(ad []byte, plain string) (string, error) {
	if len(plain) > 0xFFFF {
		return "", fmt.Errorf("the store's cursor is %d bytes, more than a sealed cursor holds", len(plain))
	}
	padded := make([]byte, 2+len(plain), (2+len(plain)+cursorBlock-1)/cursorBlock*cursorBlock)
	binary.BigEndian.PutUint16(padded, uint16(len(plain)))
	copy(padded[2:], plain)
	padded = padded[:cap(padded)] // the zeros up to the block
	m := hmac.New(sha256.New, c.mac)
	m.Write(ad)
	m.Write(padded)
	nonce := m.Sum(nil)[:cursorNonce]
	return base64.RawURLEncoding.EncodeToString(c.aead.Seal(nonce, nonce, padded, ad)), nil
}

// open returns the store cursor sealed in text for ad, or an error
// wrapping errCursorSeal when text is not such a cursor.
func (c cursorSealer) open(ad []byte, text string) (string, error) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(text)
	if err != nil || len(raw) < cursorNonce+c.aead.Overhead()+cursorBlock {
		return "", errCursorSeal
	}
	padded, err := c.aead.Open(nil, raw[:cursorNonce], raw[cursorNonce:], ad)
	if err != nil {
		return "", errCursorSeal
	}
	n := int(binary.BigEndian.Uint16(padded))
	if 2+n > len(padded) {
		return "", errCursorSeal
	}
	return string(padded[2 : 2+n]), nil
}
