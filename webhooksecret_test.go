package imagegen_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// TestRotatedWebhookSecretSignsWithBothDuringTheGrace: after a
// rotation deliveries are signed with the new secret, then the one it
// replaced, until the grace ends; then with the new one only.
func TestRotatedWebhookSecretSignsWithBothDuringTheGrace(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	old, err := f.svc.WebhookSecret(ctx, "u")
	is.NoErr(err)
	signing, err := f.svc.WebhookSigningSecrets(ctx, "u")
	is.NoErr(err)
	is.Equal(signing, []string{old}) // never rotated: one secret

	rotatedAt := f.clock.Now()
	rot, err := f.svc.RotateWebhookSecret(ctx, "u")
	is.NoErr(err)
	is.True(strings.HasPrefix(rot.Secret, imagegen.WebhookSecretPrefix))
	is.True(rot.Secret != old)
	is.True(rot.PreviousExpiresAt.Equal(rotatedAt.Add(imagegen.DefaultWebhookSecretGrace)))
	current, err := f.svc.WebhookSecret(ctx, "u")
	is.NoErr(err)
	is.Equal(current, rot.Secret) // what GET /webhook-secret shows from now on

	signing, err = f.svc.WebhookSigningSecrets(ctx, "u")
	is.NoErr(err)
	is.Equal(signing, []string{rot.Secret, old}) // the new one first
	f.clock.Advance(imagegen.DefaultWebhookSecretGrace - time.Millisecond)
	signing, err = f.svc.WebhookSigningSecrets(ctx, "u")
	is.NoErr(err)
	is.Equal(signing, []string{rot.Secret, old}) // the last moment of the grace
	f.clock.Advance(time.Millisecond)
	signing, err = f.svc.WebhookSigningSecrets(ctx, "u")
	is.NoErr(err)
	is.Equal(signing, []string{rot.Secret}) // the grace is over

	// Another user's secret is not touched.
	other, err := f.svc.WebhookSigningSecrets(ctx, "v")
	is.NoErr(err)
	is.Equal(len(other), 1)
	is.True(other[0] != old && other[0] != rot.Secret)
}

// TestRotatingAgainEndsTheOlderGrace: only the secret a rotation
// replaces keeps a grace; one still in its grace stops signing.
func TestRotatingAgainEndsTheOlderGrace(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	first, err := f.svc.WebhookSecret(ctx, "u")
	is.NoErr(err)
	second, err := f.svc.RotateWebhookSecret(ctx, "u")
	is.NoErr(err)
	f.clock.Advance(time.Hour)
	third, err := f.svc.RotateWebhookSecret(ctx, "u")
	is.NoErr(err)
	is.True(third.PreviousExpiresAt.Equal(f.clock.Now().Add(imagegen.DefaultWebhookSecretGrace)))
	signing, err := f.svc.WebhookSigningSecrets(ctx, "u")
	is.NoErr(err)
	is.Equal(signing, []string{third.Secret, second.Secret})
	is.True(third.Secret != first)
}

func TestWebhookSecretGraceIsConfigured(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) { c.WebhookSecretGrace = time.Hour })
	rot, err := f.svc.RotateWebhookSecret(ctx, "u")
	is.NoErr(err)
	is.True(rot.PreviousExpiresAt.Equal(f.clock.Now().Add(time.Hour)))
	f.clock.Advance(time.Hour)
	signing, err := f.svc.WebhookSigningSecrets(ctx, "u")
	is.NoErr(err)
	is.Equal(signing, []string{rot.Secret})

	_, err = imagegen.New(imagegen.Config{Store: f.store, Model: imagegentest.NewModel(1), WebhookSecretGrace: -time.Second})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "Config.WebhookSecretGrace")) // names the field
}

// racingStore runs race just before the first ReplaceSharedSecret it is
// asked for: another rotation that gets there first.
type racingStore struct {
	imagegen.Store
	race func()
}

func (s *racingStore) ReplaceSharedSecret(ctx context.Context, name string, old, next []byte) (bool, error) {
	if race := s.race; race != nil {
		s.race = nil
		race()
	}
	return s.Store.ReplaceSharedSecret(ctx, name, old, next)
}

// TestConcurrentRotationsRotateOnce: a rotation that loses the swap to
// another of the same secret rotates nothing and answers what the
// winner did, so the secret both replaced keeps its grace.
func TestConcurrentRotationsRotateOnce(t *testing.T) {
	is := is.New(t)
	racing := &racingStore{}
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) { racing.Store = c.Store; c.Store = racing })
	old, err := f.svc.WebhookSecret(ctx, "u")
	is.NoErr(err)
	var winner imagegen.WebhookRotation
	racing.race = func() {
		var err error
		winner, err = f.svc.RotateWebhookSecret(ctx, "u")
		is.NoErr(err)
	}
	loser, err := f.svc.RotateWebhookSecret(ctx, "u")
	is.NoErr(err)
	is.Equal(loser, winner) // one rotation, the same answer
	current, err := f.svc.WebhookSecret(ctx, "u")
	is.NoErr(err)
	is.Equal(current, winner.Secret)
	signing, err := f.svc.WebhookSigningSecrets(ctx, "u")
	is.NoErr(err)
	is.Equal(signing, []string{winner.Secret, old}) // the replaced secret still signs
}

// TestWebhookSecretOfEarlierReleasesIsKept: a secret stored before
// rotations existed (the bare key) is the current one, and the one a
// first rotation keeps signing with.
func TestWebhookSecretOfEarlierReleasesIsKept(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	key := bytes.Repeat([]byte{7}, 32)
	_, err := f.store.SharedSecret(ctx, "webhook:u", func() []byte { return key })
	is.NoErr(err)
	want := imagegen.WebhookSecretPrefix + base64.StdEncoding.EncodeToString(key)
	got, err := f.svc.WebhookSecret(ctx, "u")
	is.NoErr(err)
	is.Equal(got, want)
	rot, err := f.svc.RotateWebhookSecret(ctx, "u")
	is.NoErr(err)
	signing, err := f.svc.WebhookSigningSecrets(ctx, "u")
	is.NoErr(err)
	is.Equal(signing, []string{rot.Secret, want})

	// A stored value that is neither is an error, not a key.
	_, err = f.store.SharedSecret(ctx, "webhook:v", func() []byte { return []byte("short") })
	is.NoErr(err)
	_, err = f.svc.WebhookSecret(ctx, "v")
	is.True(err != nil)
	_, err = f.svc.RotateWebhookSecret(ctx, "v")
	is.True(err != nil)
}

// TestRotationLogsNoSecret: the rotation is logged, without either
// secret in any form.
func TestRotationLogsNoSecret(t *testing.T) {
	is := is.New(t)
	var logs bytes.Buffer
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	old, err := f.svc.WebhookSecret(ctx, "u")
	is.NoErr(err)
	rot, err := f.svc.RotateWebhookSecret(ctx, "u")
	is.NoErr(err)
	is.True(strings.Contains(logs.String(), "webhook secret rotated"))
	for _, secret := range []string{old, rot.Secret} {
		b64 := strings.TrimPrefix(secret, imagegen.WebhookSecretPrefix)
		key, err := base64.StdEncoding.DecodeString(b64)
		is.NoErr(err)
		for _, form := range []string{b64, base64.RawURLEncoding.EncodeToString(key), base64.URLEncoding.EncodeToString(key), string(key)} {
			is.True(!strings.Contains(logs.String(), form))
		}
	}
	is.True(!strings.Contains(logs.String(), imagegen.WebhookSecretPrefix))
}
