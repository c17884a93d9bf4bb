package dialwatch_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/dialwatch"
	"github.com/imagegen/imagegen/internal/nettest"
)

// A Redis that refuses connections: go-redis retries until the deadline
// and says only that; Explain names the refused connection.
func TestExplainNamesTheRefusedConnection(t *testing.T) {
	is := is.New(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: nettest.ClosedAddr(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	w := dialwatch.Attach(rdb)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := w.Explain(rdb.Ping(ctx).Err(), start)
	is.True(err != nil)
	is.True(errors.Is(err, syscall.ECONNREFUSED)) // err
	// An error that is not a context's end is left as it is.
	plain := errors.New("WRONGPASS")
	is.Equal(w.Explain(plain, start), plain)
	// A dial older than since is not blamed.
	is.True(!errors.Is(w.Explain(context.DeadlineExceeded, time.Now().Add(time.Hour)), syscall.ECONNREFUSED))
}
