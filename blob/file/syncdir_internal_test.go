package file

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A Put syncs the directory its rename wrote to, once the blob's name is
// in it, and, in a shard directory it made, the directories above up to
// the store's, which hold the new names: else a power loss after the Put
// returned (and the image's record was committed) could lose the blob.
func TestPutSyncsTheDirectoriesItWroteTo(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	const key = "a-blob"
	path := s.Path(key)
	var synced []string
	s.syncDir = func(dir string) error {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s synced before the blob was renamed into place: %v", dir, err)
		}
		synced = append(synced, dir)
		return syncDir(dir)
	}
	put := func() {
		if err := s.Put(context.Background(), key, strings.NewReader("abc"), 3, "image/png"); err != nil {
			t.Fatal(err)
		}
	}
	put() // a new shard: its two levels and the store's directory
	leaf := filepath.Dir(path)
	if want := []string{leaf, filepath.Dir(leaf), s.Dir()}; !slices.Equal(synced, want) {
		t.Fatalf("a Put into a new shard synced %q; want %q", synced, want)
	}
	synced = nil
	put() // the same shard again: its directory alone
	if want := []string{leaf}; !slices.Equal(synced, want) {
		t.Fatalf("a Put into an existing shard synced %q; want %q", synced, want)
	}
}
