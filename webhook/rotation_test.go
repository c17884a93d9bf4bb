package webhook_test

import (
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// TestRotationSignsWithBothSecretsDuringTheGrace: after the user
// rotates the secret, a receiver that still has the old one verifies
// every delivery until the grace ends, one that has the new one from
// the start; after the grace only the new one does.
func TestRotationSignsWithBothSecretsDuringTheGrace(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, true)
	old, err := f.svc.WebhookSecret(ctx, "u")
	is.NoErr(err)
	rot, err := f.svc.RotateWebhookSecret(ctx, "u")
	is.NoErr(err)

	// deliver finishes a task and delivers its callback, and returns the
	// request the receiver got.
	deliver := func() call {
		t.Helper()
		f.finishedTask(t)
		n, err := f.disp.RunOnce(ctx)
		is.NoErr(err)
		is.Equal(n, 1)
		calls := f.recv.got()
		return calls[len(calls)-1]
	}
	verify := func(c call, secret string) error {
		return wire.Verify(secret, c.header, c.body, f.clock.Now(), wire.DefaultTolerance)
	}

	during := deliver()
	sigs := strings.Fields(during.header.Get(wire.HeaderSignature))
	is.Equal(len(sigs), 2) // one per secret
	newSig, err := wire.Sign(rot.Secret, during.id, f.clock.Now(), during.body)
	is.NoErr(err)
	is.Equal(sigs[0], newSig)            // the new secret's first
	is.NoErr(verify(during, old))        // a receiver not yet moved verifies
	is.NoErr(verify(during, rot.Secret)) // and one already moved

	f.clock.Advance(imagegen.DefaultWebhookSecretGrace - time.Minute)
	late := deliver()
	is.NoErr(verify(late, old)) // still within the grace

	f.clock.Advance(time.Minute)
	after := deliver()
	is.Equal(len(strings.Fields(after.header.Get(wire.HeaderSignature))), 1)
	is.NoErr(verify(after, rot.Secret))
	is.Equal(verify(after, old), wire.ErrInvalidSignature) // the old secret no longer signs
}
