// Package pgtest helps tests run against the PostgreSQL named by
// IMAGEGEN_TEST_POSTGRES (a postgres:// URL), each in a schema of its
// own that is dropped when the test ends.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvVar names the PostgreSQL the tests run against when it is set.
const EnvVar = "IMAGEGEN_TEST_POSTGRES"

// URL returns IMAGEGEN_TEST_POSTGRES, or skips the test (saying so) when
// it is not set.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(EnvVar)
	if url == "" {
		t.Skip(EnvVar + " is not set (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable); the PostgreSQL tests need a server")
	}
	return url
}

// Connect returns a pool of at least 8 connections on
// IMAGEGEN_TEST_POSTGRES, closed when the test ends, or skips the test
// when the variable is not set. It fails the test when the server does
// not answer.
func Connect(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return ConnectPool(t, 8)
}

// ConnectPool is Connect with a pool of at least minConns connections
// (benchmarks want more).
func ConnectPool(t testing.TB, minConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(URL(t))
	if err != nil {
		t.Fatalf("%s: %v", EnvVar, err)
	}
	cfg.MaxConns = max(cfg.MaxConns, minConns)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("%s: %v", EnvVar, err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("%s does not answer: %v", EnvVar, err)
	}
	return pool
}

// Schema returns the name of a new, unused schema ("imagegen_test_"
// and random characters) and drops it, with everything in it, when the
// test ends. The schema itself is created by whoever uses it first
// (migrations create it).
func Schema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	name := "imagegen_test_" + uuid.NewString()[:8]
	t.Cleanup(func() { DropSchema(t, pool, name) })
	return name
}

// DropSchema drops a schema the test created, with its contents.
func DropSchema(t testing.TB, pool *pgxpool.Pool, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := pool.Exec(ctx, fmt.Sprintf("DROP SCHEMA IF EXISTS %s CASCADE", pgx.Identifier{name}.Sanitize())); err != nil {
		t.Errorf("drop schema %s: %v", name, err)
	}
}

// FillIdle makes pool hold at least n idle connections: it acquires n at
// once, then releases them (a pooler restart then leaves them all stale).
func FillIdle(t testing.TB, pool *pgxpool.Pool, n int) {
	t.Helper()
	held := make([]*pgxpool.Conn, 0, n)
	for range n {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		c.Release()
	}
	if idle := pool.Stat().IdleConns(); idle < int32(n) {
		t.Fatalf("the pool holds %d idle connections, want %d", idle, n)
	}
}
