package postgres

import (
	"strings"
	"testing"
	"testing/fstest"
)

// Two branches that each add the next version, under different names,
// must not merge into one migration made of both halves.
func TestTwoMigrationsOfOneVersionAreRefused(t *testing.T) {
	files := fstest.MapFS{
		"migrations/0001_store.up.sql":        {Data: []byte("CREATE TABLE a ();")},
		"migrations/0001_store.down.sql":      {Data: []byte("DROP TABLE a;")},
		"migrations/0002_ring.up.sql":         {Data: []byte("CREATE TABLE b ();")},
		"migrations/0002_ring.down.sql":       {Data: []byte("DROP TABLE b;")},
		"migrations/0002_scheduling.up.sql":   {Data: []byte("CREATE TABLE c ();")},
		"migrations/0002_scheduling.down.sql": {Data: []byte("DROP TABLE c;")},
	}
	_, err := readMigrations(files)
	if err == nil || !strings.Contains(err.Error(), "two migrations are numbered 2") {
		t.Fatalf("readMigrations = %v, want the two version-2 migrations refused", err)
	}
	delete(files, "migrations/0002_scheduling.up.sql")
	delete(files, "migrations/0002_scheduling.down.sql")
	ms, err := readMigrations(files)
	if err != nil || len(ms) != 2 || ms[1].name != "ring" {
		t.Fatalf("readMigrations = %v, %v; want versions 1 and 2 (ring)", ms, err)
	}
}

// The embedded migrations themselves read cleanly.
func TestEmbeddedMigrationsRead(t *testing.T) {
	if _, err := loadMigrations(); err != nil {
		t.Fatal(err)
	}
}
