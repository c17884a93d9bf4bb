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
// The same answers with the state shared by every process come from
// package [github.com/imagegen/imagegen/ratelimit/redis] (a string of
// request times per key, or a sorted set for limits above 64, one Lua
// script per Allow, time read inside Redis) and package
// [github.com/imagegen/imagegen/ratelimit/postgres] (a row per key in the
// store's schema, one function call per Allow), for a deployment that
// runs only PostgreSQL. They are packages of their own, as the stores
// are, so that a program that limits in process (server.New's default)
// links no Redis client and no PostgreSQL driver; mixing stores and
// limiters works too (a PostgreSQL store with a Redis limiter).
//
// The same limiters count failed authentications per client address for
// httpapi (Config.AuthFailures): give that policy a limiter of its own
// (on Redis or PostgreSQL, its own Prefix, so that every API process
// shares the failure counts).
//
// Memory takes the time from an [imagegen.Clock], so tests advance a
// manual clock instead of sleeping, and keeps memory bounded by dropping
// state that no longer matters and capping how many keys it tracks.
//
// Every Limiter implementation runs the shared suite in
// [github.com/imagegen/imagegen/ratelimit/limitertest].
package ratelimit
