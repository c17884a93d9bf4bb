package pgreset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/matryer/is"
)

// Only a connection that broke under a statement empties the pool: not
// a statement the server refused, not a caller that gave up or ran out
// of time (a client that cancels its requests must not be able to reset
// every process's pool), not a connection that could not be made.
func TestLost(t *testing.T) {
	is := is.New(t)
	wrap := func(err error) error { return fmt.Errorf("postgres store: create task: %w", err) }
	for _, c := range []struct {
		err  error
		lost bool
	}{
		{wrap(io.ErrUnexpectedEOF), true},
		{wrap(io.EOF), true},
		{wrap(syscall.ECONNRESET), true},
		{wrap(syscall.EPIPE), true},
		{wrap(fmt.Errorf("complete: %w", pgconn.ErrConnClosed)), true}, // a batch whose connection broke
		{wrap(&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}), true},
		{wrap(&pgconn.PgError{Code: "08P01", Message: "server conn crashed?"}), true},
		{wrap(&pgconn.PgError{Code: "23505", Message: "duplicate key"}), false},
		{wrap(&pgconn.PgError{Code: "40001", Message: "serialization failure"}), false},
		{wrap(context.Canceled), false},
		{wrap(context.DeadlineExceeded), false},
		{wrap(&pgconn.ConnectError{}), false},
		{errors.New("some other failure"), false},
		{nil, false},
	} {
		if got := Lost(c.err); got != c.lost {
			t.Errorf("Lost(%v) = %v, want %v", c.err, got, c.lost)
		}
	}
	is.True(!Lost(errors.Join(context.Canceled, io.ErrUnexpectedEOF))) // cancelled mid-read: the caller's doing
}
