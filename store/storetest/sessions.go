package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// sessionTTL is how long the sessions of the tests live.
const sessionTTL = 12 * time.Hour

// putSession stores a session of owner opened with key and returns it
// as stored.
func putSession(t *testing.T, s imagegen.Store, id, owner, key string) imagegen.Session {
	t.Helper()
	got, err := s.PutSession(ctx, imagegen.Session{ID: id, Owner: owner, KeyID: key}, sessionTTL)
	if err != nil {
		t.Fatalf("put session %s: %v", id, err)
	}
	return got
}

// live reports whether the store has the session id, failing the test
// on any error but ErrSessionNotFound.
func live(t *testing.T, s imagegen.Store, id string) bool {
	t.Helper()
	_, err := s.Session(ctx, id)
	if err != nil && !errors.Is(err, imagegen.ErrSessionNotFound) {
		t.Fatalf("session %s: %v", id, err)
	}
	return err == nil
}

func testSessions(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store

	a := putSession(t, s, "sess-a", "u", "key-1")
	is.Equal(a.ExpiresAt.Sub(a.CreatedAt).Round(time.Second), sessionTTL) // set by the store, ttl apart
	is.True(!a.CreatedAt.IsZero())
	got, err := s.Session(ctx, "sess-a")
	is.NoErr(err)
	is.Equal(got.ID, "sess-a")
	is.Equal(got.Owner, "u")
	is.Equal(got.KeyID, "key-1")
	is.True(got.CreatedAt.Equal(a.CreatedAt))
	is.True(got.ExpiresAt.Equal(a.ExpiresAt))

	_, err = s.Session(ctx, "never-stored")
	is.True(errors.Is(err, imagegen.ErrSessionNotFound))

	// A session without an id or owner, or with no time to live, is refused.
	for _, bad := range []imagegen.Session{{Owner: "u"}, {ID: "x"}} {
		_, err := s.PutSession(ctx, bad, time.Hour)
		is.True(errors.Is(err, imagegen.ErrInvalidParams))
	}
	_, err = s.PutSession(ctx, imagegen.Session{ID: "x", Owner: "u"}, 0)
	is.True(errors.Is(err, imagegen.ErrInvalidParams))
	is.True(!live(t, s, "x"))

	// Sign-out: only the owner ends a session, and it stays ended.
	putSession(t, s, "sess-b", "u", "key-1")
	is.NoErr(s.EndSession(ctx, "someone-else", "sess-b"))
	is.True(live(t, s, "sess-b"))
	is.NoErr(s.EndSession(ctx, "u", "sess-b"))
	is.True(!live(t, s, "sess-b"))
	is.True(live(t, s, "sess-a"))              // the owner's other session goes on
	is.NoErr(s.EndSession(ctx, "u", "sess-b")) // ending it again is no error
	is.NoErr(s.EndSession(ctx, "u", "never-stored"))

	// Sessions expire with their ttl.
	h.Advance(time.Hour)
	c := putSession(t, s, "sess-c", "u", "")
	is.True(c.CreatedAt.Sub(a.CreatedAt) >= time.Hour-time.Second) // the store's clock moved
	h.Advance(sessionTTL - time.Hour - time.Second)
	is.True(live(t, s, "sess-a"))
	h.Advance(2 * time.Second)
	is.True(!live(t, s, "sess-a"))
	is.True(live(t, s, "sess-c"))

	// Sign out everywhere: every live session of the owner ends (an
	// expired one is not counted), nobody else's.
	putSession(t, s, "sess-d", "u", "key-2")
	putSession(t, s, "sess-v", "v", "key-3")
	n, err := s.EndSessions(ctx, "u")
	is.NoErr(err)
	is.Equal(n, 2) // c and d
	is.True(!live(t, s, "sess-c"))
	is.True(!live(t, s, "sess-d"))
	is.True(live(t, s, "sess-v"))
	n, err = s.EndSessions(ctx, "u")
	is.NoErr(err)
	is.Equal(n, 0)

	// A session stored again under its id is replaced, owner and all.
	putSession(t, s, "sess-v", "w", "key-4")
	got, err = s.Session(ctx, "sess-v")
	is.NoErr(err)
	is.Equal(got.Owner, "w")
	n, err = s.EndSessions(ctx, "v")
	is.NoErr(err)
	is.Equal(n, 0) // v's session was replaced by w's
	is.True(live(t, s, "sess-v"))
}

// testSessionsPerOwnerBounded: an owner keeps at most
// imagegen.MaxSessionsPerOwner sessions; each one past it ends the
// owner's other session that expires first, and no other owner's
// session is touched.
func testSessionsPerOwnerBounded(t *testing.T, h Harness) {
	is := is.New(t)
	s := h.Store
	putSession(t, s, "other-0", "v", "key-v")
	const extra = 3
	for i := range imagegen.MaxSessionsPerOwner + extra {
		putSession(t, s, fmt.Sprintf("sess-%03d", i), "u", "key-u")
		h.Advance(time.Second) // each later than the one before
	}
	for i := range imagegen.MaxSessionsPerOwner + extra {
		is.Equal(live(t, s, fmt.Sprintf("sess-%03d", i)), i >= extra) // the first ones ended
	}
	is.True(live(t, s, "other-0"))

	// A new session with a shorter life is the one that expires first,
	// but it is kept: the oldest of the others is ended instead.
	_, err := s.PutSession(ctx, imagegen.Session{ID: "sess-short", Owner: "u", KeyID: "key-u"}, time.Minute)
	is.NoErr(err)
	is.True(live(t, s, "sess-short"))
	is.True(!live(t, s, fmt.Sprintf("sess-%03d", extra)))
	is.True(live(t, s, fmt.Sprintf("sess-%03d", extra+1)))
	n, err := s.EndSessions(ctx, "u")
	is.NoErr(err)
	is.Equal(n, imagegen.MaxSessionsPerOwner)
}
