package providertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestData is where an adapter keeps the wire examples and API
// descriptions its fake serves and checks requests against: the
// package's testdata directory, which go test runs the package's tests
// beside. Each file's public source is named in the directory's
// README.md.
const TestData = "testdata"

// Spec returns the file name of TestData, or fails the test when it
// cannot be read. It may call t.Fatal, so call it on the test's
// goroutine only; a fake's handler serves Examples instead.
func Spec(t testing.TB, name string) []byte {
	t.Helper()
	return specIn(t, TestData, name)
}

func specIn(t testing.TB, dir, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("reading the wire example %s: %v", name, err)
	}
	return data
}

// Examples are the JSON wire examples of a directory, read into memory
// on the test's goroutine so that a fake's handler can serve them.
type Examples struct {
	t     testing.TB
	files map[string][]byte
}

// LoadExamples reads every .json file of dir (most often TestData); it
// fails the test when dir cannot be read or holds none.
func LoadExamples(t testing.TB, dir string) *Examples {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading the wire examples: %v", err)
	}
	e := &Examples{t: t, files: map[string][]byte{}}
	for _, entry := range entries {
		if !entry.IsDir() && strings.HasSuffix(entry.Name(), ".json") {
			e.files[entry.Name()] = specIn(t, dir, entry.Name())
		}
	}
	if len(e.files) == 0 {
		t.Fatalf("no wire examples in %s", dir)
	}
	return e
}

// Get returns the example name. An unknown name fails the test with
// t.Errorf (safe on any goroutine) and returns nil, which a fake answers
// as it would an empty body.
func (e *Examples) Get(name string) []byte {
	data, ok := e.files[name]
	if !ok {
		e.t.Errorf("no wire example %s", name)
	}
	return data
}
