// Package redis is an [imagegen.Limiter] on Redis, so that any number of
// API processes on one Redis share each key's limit, with the same
// answers as the in-process [github.com/imagegen/imagegen/ratelimit.Memory].
//
// Each key is the log of its accepted requests' times (one string; a
// sorted set above MaxLogLimit), named in a hash tag for Redis Cluster;
// an embedded Lua script checks and records atomically, reading the time
// inside Redis (TIME), so processes with skewed clocks agree, and the
// calls a process makes together share one script run. Every key
// expires a Window after its last accepted request. Tests move
// miniredis's clock, or pass Config.Now on a real server.
//
// It lives apart from package ratelimit, as store/redis lives apart from
// store/memory, so that a program that limits in process links no Redis
// client.
package redis
