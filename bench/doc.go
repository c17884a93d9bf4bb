// Package bench compares imagegen's Redis backend with baselines on the
// same Redis server: a bare EVALSHA of an equivalent script, and asynq
// (github.com/hibiken/asynq), a well-known Redis task queue; and its
// PostgreSQL backend with River (github.com/riverqueue/river, riverpgxv5)
// on the same PostgreSQL server (postgres_test.go; it skips without
// IMAGEGEN_TEST_POSTGRES), beside the memory and Redis stores doing the
// same work. It is a separate module so that asynq and River never become
// dependencies of imagegen.
//
// Run it against a real Redis (it skips without one):
//
//	cd bench && IMAGEGEN_TEST_REDIS=redis://127.0.0.1:6379/15 go test -run '^$' -bench . -benchtime 20000x
//
// issue27.sh runs one set of the README's performance table, every line
// beside its anchor, and prints the medians and ratios.
//
// Keys are written under a fresh prefix (imagegen) or queue (asynq) and
// deleted afterwards; asynq runs in the database numbered one lower so its
// bookkeeping keys stay apart.
package bench
