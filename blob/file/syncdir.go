package file

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// syncDirs makes the entries of a Put durable: it syncs the blob's
// directory, where the rename wrote the blob's name, and, when fresh
// (MkdirAll may just have made it), each directory above it up to the
// store's, which hold the new directories' names. A synced file whose
// rename is not synced can be lost with the machine's power while its
// image record, in the task store, was committed: a record whose bytes
// are gone for good.
func (s *Store) syncDirs(path string, fresh bool) error {
	dir := filepath.Dir(path)
	if !fresh {
		return s.syncDir(dir)
	}
	for ; len(dir) > len(s.dir); dir = filepath.Dir(dir) {
		if err := s.syncDir(dir); err != nil {
			return err
		}
	}
	return s.syncDir(s.dir)
}

// syncDir syncs the directory dir. Windows cannot sync a directory (and
// keeps a rename without it, on NTFS): there it does nothing.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
