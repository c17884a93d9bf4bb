// Package ratelimit has the rate limiters of imagegen.
//
// [Memory] implements [imagegen.Limiter] in process: each key (an API
// key, a user) may make at most Limit requests in any rolling Window
// (default 10 per minute). It keeps an exact sliding log per key, so
// there is no burst at window boundaries, and every answer carries what
// the RateLimit, RateLimit-Policy and Retry-After headers need:
//
//   - Remaining: requests the key may still make now, after this one;
//   - Reset: how long until one more request is allowed; 0 while
//     Remaining > 0, else until the oldest request in the window leaves it;
//   - RetryAfter: on a refusal, how long until a request is allowed (equal
//     to Reset then); 0 when allowed.
//
// A refused request is not recorded, so a client that retries early does
// not push its wait further out.
//
// [Redis] gives the same answers with its state in Redis, so that any
// number of API processes on one Redis share each key's limit. Each key
// is a sorted set of its accepted requests' times ("{" + Prefix + key +
// "}", a hash tag for Redis Cluster); one embedded Lua script per
// [Redis.Allow] expires, counts and records atomically in one round trip,
// reading the time inside Redis (TIME), so processes with skewed clocks
// agree. Every key expires a Window after its last accepted request.
//
// [Postgres] gives the same answers with its state in PostgreSQL, for a
// deployment that runs only PostgreSQL: one row per key in the store's
// schema (table rate_limits, made by the store's migrations), updated by
// one function call per [Postgres.Allow] that locks the key's row, so
// every process on the database shares each key's limit. Mixing stores
// and limiters works too (a Postgres store with a Redis limiter).
//
// The same limiters count failed authentications per client address for
// httpapi (Config.AuthFailures): give that policy a limiter of its own
// (on Redis or PostgreSQL, its own Prefix, so that every API process
// shares the failure counts).
//
// Memory takes the time from an [imagegen.Clock], so tests advance a
// manual clock instead of sleeping, and keeps memory bounded by dropping
// state that no longer matters and capping how many keys it tracks. Redis tests move miniredis's clock, or pass
// RedisConfig.Now on a real server.
//
// Every Limiter implementation runs the shared suite in
// [github.com/imagegen/imagegen/ratelimit/limitertest].
package ratelimit
