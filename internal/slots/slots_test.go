package slots_test

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/internal/slots"
)

func TestTakeFree(t *testing.T) {
	is := is.New(t)
	p := slots.New(3)
	is.Equal(p.TakeFree(t.Context()), 3) // all free
	p.Give(2)
	is.Equal(p.TakeFree(t.Context()), 2) // the two given back
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	is.Equal(p.TakeFree(ctx), 0) // none free and ctx ended
	p.Give(1)
	is.Equal(p.TakeFree(ctx), 0) // ctx ended: nothing more is taken
	is.Equal(p.TakeFree(t.Context()), 1)
}

func TestTakeMore(t *testing.T) {
	is := is.New(t)
	p := slots.New(3)
	is.Equal(p.TakeMore(), 3) // all free, nothing waited for
	is.Equal(p.TakeMore(), 0) // none free: returns at once
	p.Give(2)
	is.Equal(p.TakeMore(), 2)
}
