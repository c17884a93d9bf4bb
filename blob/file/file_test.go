package file_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/blobtest"
	"github.com/imagegen/imagegen/blob/file"
)

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) imagegen.BlobStore {
		s, err := file.New(file.Config{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestSurvivesReopen: a new Store on the same directory (a restart) reads
// what the first wrote, from its sharded path.
func TestSurvivesReopen(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir := t.TempDir()
	s, err := file.New(file.Config{Dir: dir})
	is.NoErr(err)
	is.NoErr(s.Put(ctx, "img-1", bytes.NewReader([]byte("png bytes")), 9, "image/png"))
	path := s.Path("img-1")
	rel, err := filepath.Rel(dir, path)
	is.NoErr(err)
	is.Equal(len(bytes.Split([]byte(rel), []byte{filepath.Separator})), 3) // aa/bb/key
	got, err := os.ReadFile(path)
	is.NoErr(err)
	is.Equal(string(got), "png bytes")

	again, err := file.New(file.Config{Dir: dir})
	is.NoErr(err)
	b, err := again.Open(ctx, "img-1")
	is.NoErr(err)
	defer b.Body.Close()
	is.Equal(b.Size, int64(9))
}

// TestListRemovesStaleTemporaryFiles: a crashed Put's temporary file is
// neither listed nor kept once it is an hour old; a fresh one is kept (a
// Put may be writing it).
func TestListRemovesStaleTemporaryFiles(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	s, err := file.New(file.Config{Dir: dir})
	is.NoErr(err)
	stale := filepath.Join(dir, ".tmp", "put-crashed")
	fresh := filepath.Join(dir, ".tmp", "put-running")
	is.NoErr(os.WriteFile(stale, []byte("half"), 0o600))
	is.NoErr(os.WriteFile(fresh, []byte("half"), 0o600))
	old := time.Now().Add(-2 * time.Hour)
	is.NoErr(os.Chtimes(stale, old, old))

	var listed []string
	is.NoErr(s.List(context.Background(), func(i imagegen.BlobInfo) error { listed = append(listed, i.Key); return nil }))
	is.Equal(len(listed), 0)
	_, err = os.Stat(stale)
	is.True(os.IsNotExist(err))
	_, err = os.Stat(fresh)
	is.NoErr(err)
}

func TestNeedsADir(t *testing.T) {
	_, err := file.New(file.Config{})
	if err == nil {
		t.Fatal("New without Dir succeeded")
	}
}

// TestListSkipsWhatIsNotABlob: files and directories that are not where
// the store keeps a blob (an interrupted rsync's ".name.XXXXXX" beside a
// blob, a note at the top, a filesystem's lost+found) are not listed.
// They were, and SweepBlobs stopped at the first whose name is not a
// blob key (Delete refuses it): every sweep, so that the blobs listed
// after it were never deleted.
func TestListSkipsWhatIsNotABlob(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir := t.TempDir()
	s, err := file.New(file.Config{Dir: dir})
	is.NoErr(err)
	is.NoErr(s.Put(ctx, "img-1", bytes.NewReader([]byte("png")), 3, "image/png"))
	stray := []string{
		filepath.Join(filepath.Dir(s.Path("img-1")), ".img-1.Ab12Cd"),
		filepath.Join(dir, "notes.txt"),
		filepath.Join(dir, "lost+found", "img-2"),
	}
	for _, p := range stray {
		is.NoErr(os.MkdirAll(filepath.Dir(p), 0o700))
		is.NoErr(os.WriteFile(p, []byte("x"), 0o600))
	}

	var listed []string
	is.NoErr(s.List(ctx, func(i imagegen.BlobInfo) error {
		if err := imagegen.CheckBlobKey(i.Key); err != nil {
			return err // what SweepBlobs's Delete says
		}
		listed = append(listed, i.Key)
		return nil
	}))
	is.Equal(listed, []string{"img-1"})
}
