// Package file is an imagegen.BlobStore in a directory: image bytes
// survive restarts and never sit in Redis or process memory.
//
// Layout: <Dir>/<aa>/<bb>/<key>, where aa and bb are the first four hex
// digits of the key's SHA-256, so no directory grows past a few thousand
// entries (65,536 shard directories at most). A Put writes
// <Dir>/.tmp/<random>, syncs it, renames it into place and syncs the
// directories the rename (and a new shard directory) wrote to: a reader
// sees the old blob or the whole new one, never a part; a Put that
// returned survives a power loss; a crash leaves a temporary file that
// List removes once it is an hour old.
//
// Several processes on one host (or on a shared filesystem with atomic
// rename, such as NFSv4) may use one directory.
package file

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobkit"
)

var (
	_ imagegen.BlobStore       = (*Store)(nil)
	_ imagegen.BlobRangeReader = (*Store)(nil)
)

// Config configures a Store.
type Config struct {
	// Dir is the directory of the blobs; it is created if missing.
	// Required.
	Dir string
}

// Store keeps blobs in a directory. It is safe for concurrent use.
type Store struct {
	dir string
	tmp string
	// syncDir syncs a directory (the package's syncDir; a test's
	// recorder in tests).
	syncDir func(dir string) error
}

const (
	dirPerm   = 0o750
	filePerm  = 0o640
	tmpDir    = ".tmp"
	staleTemp = time.Hour
)

// New returns a Store on c.Dir, creating it if needed.
func New(c Config) (*Store, error) {
	if c.Dir == "" {
		return nil, errors.New("file blobs: Config.Dir is required")
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("file blobs: %w", err)
	}
	s := &Store{dir: dir, tmp: filepath.Join(dir, tmpDir), syncDir: syncDir}
	if err := os.MkdirAll(s.tmp, dirPerm); err != nil {
		return nil, fmt.Errorf("file blobs: %w", err)
	}
	return s, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Path returns where key's blob is (or would be) on disk.
func (s *Store) Path(key string) string {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:2])
	return filepath.Join(s.dir, h[:2], h[2:], key)
}

// Put writes a temporary file, syncs it, renames it into place and
// syncs the directories it was renamed into (syncDirs).
func (s *Store) Put(_ context.Context, key string, r io.Reader, size int64, _ string) error {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return err
	}
	f, err := os.CreateTemp(s.tmp, "put-*")
	if err != nil {
		return fmt.Errorf("file blobs: put %s: %w", key, err)
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := io.Copy(f, blobkit.Reader(key, r, size)); err != nil {
		return fmt.Errorf("file blobs: put %s: %w", key, err)
	}
	if err := f.Chmod(filePerm); err != nil {
		return fmt.Errorf("file blobs: put %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("file blobs: put %s: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("file blobs: put %s: %w", key, err)
	}
	path := s.Path(key)
	_, err = os.Stat(filepath.Dir(path))
	fresh := err != nil // its shard directory is (maybe) made now: its name is to be synced too
	if err := os.MkdirAll(filepath.Dir(path), dirPerm); err != nil {
		return fmt.Errorf("file blobs: put %s: %w", key, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("file blobs: put %s: %w", key, err)
	}
	done = true
	if err := s.syncDirs(path, fresh); err != nil {
		return fmt.Errorf("file blobs: put %s: sync its directory: %w", key, err)
	}
	return nil
}

// Open opens the blob's file; its Body is the *os.File.
func (s *Store) Open(_ context.Context, key string) (*imagegen.Blob, error) {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return nil, err
	}
	f, err := os.Open(s.Path(key))
	if err != nil {
		return nil, notFound(key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("file blobs: %s: %w", key, err)
	}
	return &imagegen.Blob{BlobInfo: info(key, fi), Body: f}, nil
}

// ReadRange reads n bytes of the blob's file from off (a section of the
// open file: reads go straight to it).
func (s *Store) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	b, err := s.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	if !imagegen.RangeFits(off, n, b.Size) {
		_ = b.Body.Close()
		return nil, imagegen.RangePastEnd(key, off, n, b.Size)
	}
	f := b.Body.(*os.File)
	return section{SectionReader: io.NewSectionReader(f, off, n), f: f}, nil
}

// section is a range of an open file, which Close closes.
type section struct {
	*io.SectionReader
	f *os.File
}

func (s section) Close() error { return s.f.Close() }

// Stat returns the blob's info from its file.
func (s *Store) Stat(_ context.Context, key string) (imagegen.BlobInfo, error) {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return imagegen.BlobInfo{}, err
	}
	fi, err := os.Stat(s.Path(key))
	if err != nil {
		return imagegen.BlobInfo{}, notFound(key, err)
	}
	return info(key, fi), nil
}

// Delete removes the blob's file.
func (s *Store) Delete(_ context.Context, key string) error {
	if err := imagegen.CheckBlobKey(key); err != nil {
		return err
	}
	if err := os.Remove(s.Path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("file blobs: delete %s: %w", key, err)
	}
	return nil
}

// List walks the shard directories. It also removes temporary files of
// Puts that crashed (older than an hour). Whatever is not where a blob
// is kept (a filesystem's lost+found, an interrupted copy's temporary
// file) is not a blob and is not listed: SweepBlobs would stop at a name
// that is not a blob key, every time, and never reach the blobs after it.
func (s *Store) List(ctx context.Context, fn func(imagegen.BlobInfo) error) error {
	s.removeStaleTemps()
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if path != s.dir && !s.shardDir(path) {
				return filepath.SkipDir // .tmp, or not the store's
			}
			return nil
		}
		if imagegen.CheckBlobKey(d.Name()) != nil || s.Path(d.Name()) != path {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return fn(info(d.Name(), fi))
	})
	if err != nil {
		return fmt.Errorf("file blobs: list: %w", err)
	}
	return nil
}

// shardDir reports whether path is one of the store's shard directories:
// <Dir>/<aa> or <Dir>/<aa>/<bb>, two lowercase hex digits each.
func (s *Store) shardDir(path string) bool {
	rel, err := filepath.Rel(s.dir, path)
	if err != nil {
		return false
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) > 2 {
		return false
	}
	for _, p := range parts {
		if len(p) != 2 || !isHex(p[0]) || !isHex(p[1]) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func (s *Store) removeStaleTemps() {
	entries, _ := os.ReadDir(s.tmp)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleTemp {
			_ = os.Remove(filepath.Join(s.tmp, e.Name()))
		}
	}
}

func info(key string, fi fs.FileInfo) imagegen.BlobInfo {
	return imagegen.BlobInfo{
		Key: key, Size: fi.Size(), ModTime: fi.ModTime(),
		ETag: `"` + strconv.FormatInt(fi.ModTime().UnixNano(), 36) + "-" + strconv.FormatInt(fi.Size(), 36) + `"`,
	}
}

func notFound(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("file blobs: %s: %w", key, imagegen.ErrBlobNotFound)
	}
	return fmt.Errorf("file blobs: %s: %w", key, err)
}
