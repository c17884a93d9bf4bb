package memory

import (
	"context"
	"slices"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// PutKey stores a new key; ErrKeyExists when its hash is taken.
func (s *Store) PutKey(_ context.Context, k imagegen.APIKey) error {
	if err := storekit.CheckNewKey(k); err != nil {
		return err
	}
	s.lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[k.Hash]; ok {
		return imagegen.ErrKeyExists
	}
	s.keys[k.Hash] = &k
	s.ownerKeys[k.Owner] = append(s.ownerKeys[k.Owner], k.Hash)
	return nil
}

// KeyByHash returns the live key with the hash. Keys do not expire, so
// it reads them without lock's sweep and clock read (every API request
// authenticates through here; the store's next other call sweeps).
func (s *Store) KeyByHash(_ context.Context, hash string) (*imagegen.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[hash]
	if !ok || k.Revoked {
		return nil, imagegen.ErrKeyNotFound
	}
	// A copy, the one allocation of an authentication: the record is
	// changed in place under the lock (TouchKey, RevokeKey), and the
	// caller gets a value of its own (Service.Authenticate hands it on to
	// the host app), so handing out the record itself would let a caller's
	// change reach the store and its reads race the store's writes.
	c := *k
	return &c, nil
}

// Keys lists the owner's keys in creation order.
func (s *Store) Keys(_ context.Context, owner string) ([]imagegen.APIKey, error) {
	s.lock()
	defer s.mu.Unlock()
	hashes := s.ownerKeys[owner]
	out := make([]imagegen.APIKey, 0, len(hashes))
	for _, h := range hashes {
		out = append(out, *s.keys[h])
	}
	return out, nil
}

// RevokeKey revokes the owner's key id.
func (s *Store) RevokeKey(_ context.Context, owner, id string) error {
	s.lock()
	defer s.mu.Unlock()
	for _, h := range s.ownerKeys[owner] {
		if k := s.keys[h]; k.ID == id {
			k.Revoked = true
			return nil
		}
	}
	return imagegen.ErrKeyNotFound
}

// DeleteKey deletes the owner's revoked key id.
func (s *Store) DeleteKey(_ context.Context, owner, id string) error {
	s.lock()
	defer s.mu.Unlock()
	hashes := s.ownerKeys[owner]
	for i, h := range hashes {
		if k := s.keys[h]; k.ID == id && k.Revoked {
			delete(s.keys, h)
			s.ownerKeys[owner] = slices.Delete(hashes, i, i+1)
			return nil
		}
	}
	return imagegen.ErrKeyNotFound
}

// TouchKey records the key's use now, unless its last recorded use is
// less than imagegen.KeyUseGranularity ago.
func (s *Store) TouchKey(_ context.Context, hash string) error {
	now := s.lock()
	defer s.mu.Unlock()
	k, ok := s.keys[hash]
	if !ok {
		return imagegen.ErrKeyNotFound
	}
	if now.Sub(k.LastUsedAt) >= imagegen.KeyUseGranularity {
		k.LastUsedAt = now.UTC()
	}
	return nil
}
