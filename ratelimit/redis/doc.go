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
// A request whose script run reached Redis but whose reply was lost
// (go-redis sends a command again when its connection breaks after the
// command was written) is counted twice: the run sent again records it
// again and answers for itself, so a request that took a key's last free
// place is answered as over the limit. This is accepted: it happens
// only on a broken connection, costs the key one place until it leaves
// the Window, and errs on the side of the limit; telling a run sent
// again from a new request would need a token of each request in the
// log, read and written at every check.
//
// It lives apart from package ratelimit, as store/redis lives apart from
// store/memory, so that a program that limits in process links no Redis
// client.
package redis
