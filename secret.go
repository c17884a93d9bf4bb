package imagegen

import "crypto/rand"

// NewSecretKey returns 32 random bytes: a signing key, and what the
// callers of SecretStore.SharedSecret pass as generate.
func NewSecretKey() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return b
}
