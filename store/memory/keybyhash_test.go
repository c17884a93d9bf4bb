package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/memory"
)

// The key KeyByHash returns is the caller's own: changing it changes
// nothing in the store, and the store's later changes (a use, a revoke)
// do not reach it. (Its copy is the one allocation of an authentication,
// and stays for this.)
func TestKeyByHashReturnsACopy(t *testing.T) {
	ctx := context.Background()
	s, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := imagegen.APIKey{ID: "k1", Owner: "ann", Hash: "h1", Hint: "ig_ab", CreatedAt: time.Unix(1, 0)}
	if err := s.PutKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	got, err := s.KeyByHash(ctx, "h1")
	if err != nil {
		t.Fatal(err)
	}
	got.Owner, got.Revoked, got.Hash = "mallory", true, "h2"
	again, err := s.KeyByHash(ctx, "h1")
	if err != nil {
		t.Fatalf("after changing the returned key: %v", err)
	}
	if *again != k {
		t.Errorf("stored key %+v after the caller changed its copy; want %+v", *again, k)
	}
	if err := s.RevokeKey(ctx, "ann", "k1"); err != nil {
		t.Fatal(err)
	}
	if again.Revoked {
		t.Error("a revoke changed a key already returned")
	}
	if _, err := s.KeyByHash(ctx, "h1"); !errors.Is(err, imagegen.ErrKeyNotFound) {
		t.Errorf("revoked key: %v; want ErrKeyNotFound", err)
	}
}
