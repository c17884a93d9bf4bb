// Package redis is an [imagegen.Limiter] on Redis, so that any number of
// API processes on one Redis share each key's limit, with the same
// answers as the in-process [github.com/imagegen/imagegen/ratelimit.Memory].
//
// Each key is a sorted set of its accepted requests' times ("{" + Prefix +
// key + "}", a hash tag for Redis Cluster); one embedded Lua script per
// [Limiter.Allow] expires, counts and records atomically in one round
// trip, reading the time inside Redis (TIME), so processes with skewed
// clocks agree. Every key expires a Window after its last accepted
// request. Tests move miniredis's clock, or pass Config.Now on a real
// server.
//
// It lives apart from package ratelimit, as store/redis lives apart from
// store/memory, so that a program that limits in process links no Redis
// client.
package redis
