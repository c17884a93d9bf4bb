// Package pgreset empties a pgx pool when a statement finds its
// connection broken: the server, or a pooler in front of it (PgBouncer),
// restarted or dropped its connections, so every idle connection of the
// pool is as dead as the one that failed. Without it each of them fails
// one call in turn before the pool lets it go (up to MaxConns failed
// calls after a pooler restart); with it, the calls in flight at that
// moment fail and the next ones get new connections.
package pgreset

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Interval is the least time between two resets of a pool by one Pool.
const Interval = time.Second

// Pool resets a pool (pgxpool.Pool.Reset: idle connections close at
// once, those in use when they come back) when Note is given an error
// that says a connection broke, at most once an Interval, so that a
// burst of such failures resets it once. The zero value does nothing;
// make one with New. It is safe for concurrent use.
type Pool struct {
	pool *pgxpool.Pool
	born time.Time    // when New made it: times are read from here (the monotonic clock)
	last atomic.Int64 // nanoseconds from born to the last reset, plus Interval (0: none yet, always due)
}

// New returns a Pool that resets pool.
func New(pool *pgxpool.Pool) *Pool { return &Pool{pool: pool, born: time.Now()} }

// Note resets the pool when err says a connection broke (Lost). Every
// error of the pool's statements should pass here.
func (r *Pool) Note(err error) {
	if r == nil || r.pool == nil || !Lost(err) {
		return
	}
	// Measured on the monotonic clock, so that a wall clock stepped back
	// cannot keep the pool from being reset.
	now, last := int64(time.Since(r.born))+int64(Interval), r.last.Load()
	if now-last < int64(Interval) || !r.last.CompareAndSwap(last, now) {
		return
	}
	r.pool.Reset()
}

// Lost reports whether err says that the connection broke
// under a statement (the server or a pooler went away, or said it is
// shutting down), not that a statement failed, a deadline passed, the
// caller gave up or a new connection could not be made. A caller that
// cancels its requests must not be able to empty the pool.
//
// A batch (pgx.Batch) whose connection broke fails with
// pgconn.ErrConnClosed, not the read's error: pgx closes the connection
// on the read's EOF and its result reader drops that error, reporting
// the connection closed instead. A pool never hands out a closed
// connection, so that error means one broke under the call; a
// cancelled call's is context.Canceled, and the store returns it before
// using the connection again.
func Lost(err error) bool {
	var connectErr *pgconn.ConnectError
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		pgconn.Timeout(err), errors.As(err, &connectErr):
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08 is a connection exception; 57P01-57P03 the server
		// shutting down, crashed or not yet accepting connections.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, pgconn.ErrConnClosed)
}
