// Package postgres is an [imagegen.Limiter] on PostgreSQL, for a
// deployment that runs only PostgreSQL, with the same answers as the
// in-process [github.com/imagegen/imagegen/ratelimit.Memory]: one row per
// key in the store's schema (table rate_limits, made by the store's
// migrations: store/postgres.Migrate or `imagegen migrate`), read by one
// function call per [Limiter.Allow] and changed in place (one slot) only
// when the request is accepted, so every process on the database shares
// each key's limit and a refusal writes nothing (see [Limiter]). The
// checks that one Limiter's callers make at the same time share a round
// trip and a transaction (group commit). Mixing stores
// and limiters works too (a PostgreSQL store with a Redis limiter).
//
// A check that finds its connection broken (the server or a pooler in
// front of it restarted) empties the pool, as the store's statements
// do, so that the next checks run on new connections instead of each
// stale one failing a request in turn.
//
// It lives apart from package ratelimit, as store/postgres lives apart
// from store/memory, so that a program that limits in process links no
// PostgreSQL driver.
package postgres
