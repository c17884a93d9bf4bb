// Package postgres is an [imagegen.Limiter] on PostgreSQL, for a
// deployment that runs only PostgreSQL, with the same answers as the
// in-process [github.com/imagegen/imagegen/ratelimit.Memory]: one row per
// key in the store's schema (table rate_limits, made by the store's
// migrations: store/postgres.Migrate or `imagegen migrate`), updated by
// one function call per [Limiter.Allow] that locks the key's row, so
// every process on the database shares each key's limit. Mixing stores
// and limiters works too (a PostgreSQL store with a Redis limiter).
//
// It lives apart from package ratelimit, as store/postgres lives apart
// from store/memory, so that a program that limits in process links no
// PostgreSQL driver.
package postgres
