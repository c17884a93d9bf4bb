package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/imagegen/imagegen/imagegentest"
)

var newKeyValue = regexp.MustCompile(`id="new-key-value">([^<]+)<`)

// Making a key and signing in with it gives no fresh allowance: key
// creations count against the user's own budget as well as the key's,
// so within one window a user makes at most the rate limit's worth of
// keys, however they sign in. Each key had only its own 10 a minute, so
// a user who signed in with each new key (1 of its 10), made the next
// with it (1 more) and revoked the old one (free) made keys, and with
// them API requests, without bound: the cap of 20 keys, there to bound
// what one user may send, bounded nothing.
func TestKeyCreationsShareTheOwnersBudget(t *testing.T) {
	clock := imagegentest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newFixture(t, fixtureConfig{clock: clock})
	ctx := context.Background()
	key := f.user(t, "mallory", 0)
	b := f.browser(t)
	b.signIn(key)

	created := 0
	for range 30 { // the clock stands still: one window
		p := b.submitForm("/console/keys", "/console/keys", url.Values{"name": {"next"}})
		if p.status == http.StatusTooManyRequests {
			break
		}
		m := newKeyValue.FindStringSubmatch(p.body)
		if p.status != http.StatusOK || m == nil {
			t.Fatalf("creating a key: status %d, no key shown", p.status)
		}
		created++
		b.signIn(m[1]) // a session of the new key: its own budget of 10
		keys, err := f.svc.Keys(ctx, "mallory")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys[:len(keys)-1] { // revoking is free
			if !k.Revoked {
				if err := f.svc.RevokeKey(ctx, "mallory", k.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if created > 10 {
		t.Fatalf("made %d keys within one minute, each with a fresh budget; want at most the rate limit, 10", created)
	}
	if created == 0 {
		t.Fatal("no key could be made at all")
	}
	clock.Advance(time.Minute)
	if p := b.submitForm("/console/keys", "/console/keys", url.Values{"name": {"later"}}); p.status != http.StatusOK {
		t.Fatalf("a minute later, creating a key: status %d", p.status)
	}
}
