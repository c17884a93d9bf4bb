package imagegen_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// noPendingLimit lets one owner queue as many tasks as a test submits.
func noPendingLimit(c *imagegen.Config) { c.MaxPending = -1 }

// fixedCursorKey stores the list-cursor secret before the service makes
// one, so that the cursors a test sees are the same at every run.
func fixedCursorKey(t *testing.T, f fixture) {
	t.Helper()
	_, err := f.store.SharedSecret(ctx, imagegen.ListCursorSecretName, func() []byte { return bytes.Repeat([]byte{7}, 32) })
	is.New(t).NoErr(err)
}

// nextOf is the Next of owner's first page of limit tasks as the Service
// gives it, and as the store made it.
func nextOf(t *testing.T, f fixture, owner string, limit int) (given, stored string) {
	t.Helper()
	is := is.New(t)
	page, err := f.svc.ListTasks(ctx, owner, "", limit, "")
	is.NoErr(err)
	raw, err := f.store.ListTasks(ctx, owner, "", limit, "")
	is.NoErr(err)
	is.True(page.Next != "" && raw.Next != "")
	return page.Next, raw.Next
}

// A user who lists their tasks before and after other users' submits
// learns nothing of those from the cursors: a cursor is not the store's
// submission sequence and holds it in no readable form, all cursors of a
// store have one length however long that sequence has grown, and the
// same place in the user's list has the same cursor whatever others did
// meanwhile.
func TestListCursorsHideTheStoreSequence(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1), noPendingLimit)
	fixedCursorKey(t, f)
	bobSubmits := func(n int) {
		f.funded(t, "bob", int64(n))
		for range n {
			f.submit(t, "bob")
		}
	}
	// Sequences of three digits and more, which a cursor would not hold
	// by chance.
	bobSubmits(100)
	f.submitFunded(t, "alice")
	f.submitFunded(t, "alice")
	before, storedBefore := nextOf(t, f, "alice", 1)

	bobSubmits(900)
	f.submitFunded(t, "alice")
	after, storedAfter := nextOf(t, f, "alice", 1)
	is.True(len(storedAfter) > len(storedBefore)) // the store's sequence has grown by bob's tasks

	for cursor, stored := range map[string]string{before: storedBefore, after: storedAfter} {
		is.True(!strings.Contains(cursor, stored))
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		is.NoErr(err) // base64url without padding
		is.True(!bytes.Contains(raw, []byte(stored)))
		_, err = strconv.ParseUint(cursor, 10, 64)
		is.True(err != nil)
	}
	is.Equal(len(before), len(after))

	// The next page of the later listing continues where the earlier
	// one's first page ended: the same place, the same cursor.
	page, err := f.svc.ListTasks(ctx, "alice", "", 1, after)
	is.NoErr(err)
	is.Equal(len(page.Tasks), 1)
	is.Equal(page.Next, before)
}

// A cursor opens only for the owner and list it was given for (under any
// status filter), as it was given: any other is a ValidationError on
// "cursor".
func TestListCursorsOpenOnlyForTheirListing(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	for range 3 {
		f.submitFunded(t, "alice")
		f.submitFunded(t, "bob")
	}
	tasks, stored := nextOf(t, f, "alice", 1)
	ledger, err := f.svc.ListLedger(ctx, "alice", 1, "")
	is.NoErr(err)
	is.True(ledger.Next != "")

	listTasks := func(owner string, status imagegen.Status) func(string) error {
		return func(c string) error { _, err := f.svc.ListTasks(ctx, owner, status, 1, c); return err }
	}
	listLedger := func(owner string) func(string) error {
		return func(c string) error { _, err := f.svc.ListLedger(ctx, owner, 1, c); return err }
	}
	refused := func(what string, list func(string) error, cursor string) {
		t.Helper()
		err := list(cursor)
		var ve *imagegen.ValidationError
		if !errors.As(err, &ve) || ve.Field != "cursor" || !errors.Is(err, imagegen.ErrInvalidParams) {
			t.Errorf("%s: cursor %q: got %v, want a ValidationError on cursor", what, cursor, err)
		}
	}
	is.NoErr(listTasks("alice", "")(tasks))                     // as given, it opens
	is.NoErr(listTasks("alice", imagegen.StatusPending)(tasks)) // a place in the list, whatever the filter
	is.NoErr(listLedger("alice")(ledger.Next))

	refused("another owner's task cursor", listTasks("bob", ""), tasks)
	refused("another owner's ledger cursor", listLedger("bob"), ledger.Next)
	refused("a task cursor on the ledger", listLedger("alice"), tasks)
	refused("a ledger cursor on the tasks", listTasks("alice", ""), ledger.Next)
	refused("the store's own cursor (as given before)", listTasks("alice", ""), stored)
	refused("cut", listTasks("alice", ""), tasks[:len(tasks)-4])
	refused("lengthened", listTasks("alice", ""), tasks+"AAAA")
	refused("padded", listTasks("alice", ""), tasks+"==")
	for i := range len(tasks) { // every character altered in turn
		alt := byte('A')
		if tasks[i] == alt {
			alt = 'B'
		}
		refused("altered at "+strconv.Itoa(i), listTasks("alice", ""), tasks[:i]+string(alt)+tasks[i+1:])
	}

	// Under a replaced key: another process, which reads the store's
	// secret now, seals under the new key; its cursor opens here too
	// (this Service, which kept the old key, reads the secret again),
	// and from then on the old cursors are refused; listing again from
	// the first page works.
	old, err := f.store.SharedSecret(ctx, imagegen.ListCursorSecretName, imagegen.NewSecretKey)
	is.NoErr(err)
	swapped, err := f.store.ReplaceSharedSecret(ctx, imagegen.ListCursorSecretName, old, imagegen.NewSecretKey())
	is.NoErr(err)
	is.True(swapped)
	f.clock.Advance(time.Second) // past cursorReread since this Service read the key
	other, err := imagegen.New(imagegen.Config{Store: f.store, Model: f.model, Clock: f.clock, Logger: quiet})
	is.NoErr(err)
	page, err := other.ListTasks(ctx, "alice", "", 1, "")
	is.NoErr(err)
	is.True(page.Next != tasks) // sealed under the new key
	is.NoErr(listTasks("alice", "")(page.Next))
	refused("under a replaced key", listTasks("alice", ""), tasks)
	fresh, _ := nextOf(t, f, "alice", 1)
	is.Equal(fresh, page.Next)
	is.NoErr(listTasks("alice", "")(fresh))
}

// secretReads counts its store's SharedSecret calls.
type secretReads struct {
	imagegen.Store
	n atomic.Int64
}

func (s *secretReads) SharedSecret(ctx context.Context, name string, generate func() []byte) ([]byte, error) {
	s.n.Add(1)
	return s.Store.SharedSecret(ctx, name, generate)
}

// A Service reads the cursor key from the store once, not at every
// listing: paging costs the store no more than the pages.
func TestListCursorKeyIsReadOnce(t *testing.T) {
	is := is.New(t)
	var reads *secretReads
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		reads = &secretReads{Store: c.Store}
		c.Store = reads
	})
	for range 4 {
		f.submitFunded(t, "alice")
	}
	cursor, pages := "", 0
	for {
		page, err := f.svc.ListTasks(ctx, "alice", "", 1, cursor)
		is.NoErr(err)
		pages++
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	is.Equal(pages, 4)
	is.Equal(reads.n.Load(), int64(1))
}

// gatedSecrets holds every read of the list-cursor secret after the first until gate
// is closed, as a store that is slow or out of reach would.
type gatedSecrets struct {
	imagegen.Store
	n       atomic.Int64
	gate    chan struct{}
	waiting chan struct{} // gets a value when a call waits at the gate
}

func (s *gatedSecrets) SharedSecret(ctx context.Context, name string, generate func() []byte) ([]byte, error) {
	if name == imagegen.ListCursorSecretName && s.n.Add(1) > 1 {
		s.waiting <- struct{}{}
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Store.SharedSecret(ctx, name, generate)
}

// A cursor that does not open makes the Service read the secret again;
// while that read waits on the store, listings with the key already
// kept go on: a client sending bad cursors does not hold up every
// other listing behind its store reads.
func TestListCursorRereadDoesNotBlockOtherListings(t *testing.T) {
	is := is.New(t)
	var gs *gatedSecrets
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		gs = &gatedSecrets{Store: c.Store, gate: make(chan struct{}), waiting: make(chan struct{}, 1)}
		c.Store = gs
	})
	defer close(gs.gate)
	for range 3 {
		f.submitFunded(t, "alice")
	}
	good, _ := nextOf(t, f, "alice", 1) // the key is read and kept
	f.clock.Advance(time.Second)        // a cursor that does not open makes it read again
	bad := base64.RawURLEncoding.EncodeToString(make([]byte, 60))
	go func() {
		_, _ = f.svc.ListTasks(context.Background(), "bob", "", 1, bad)
	}()
	<-gs.waiting // the bad cursor's reread is waiting on the store

	done := make(chan error, 1)
	go func() {
		_, err := f.svc.ListTasks(ctx, "alice", "", 1, good)
		done <- err
	}()
	select {
	case err := <-done:
		is.NoErr(err)
	case <-time.After(5 * time.Second):
		t.Fatal("a listing with a good cursor waited for another listing's store read of the cursor key")
	}
}

// Cursors that do not open, which any client can send, make the Service
// read the key from the store again at most once a second: not once
// each.
func TestBadCursorsRereadTheKeyAtMostOnceASecond(t *testing.T) {
	is := is.New(t)
	var reads *secretReads
	f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) {
		reads = &secretReads{Store: c.Store}
		c.Store = reads
	})
	f.submitFunded(t, "alice")
	f.submitFunded(t, "alice")
	nextOf(t, f, "alice", 1) // the key is read and kept
	is.Equal(reads.n.Load(), int64(1))
	bad := base64.RawURLEncoding.EncodeToString(make([]byte, 60))
	for range 20 {
		_, err := f.svc.ListTasks(ctx, "alice", "", 1, bad)
		is.True(errors.Is(err, imagegen.ErrInvalidParams))
	}
	is.Equal(reads.n.Load(), int64(1)) // within the second of the first read
	f.clock.Advance(time.Second)
	for range 20 {
		_, err := f.svc.ListTasks(ctx, "alice", "", 1, bad)
		is.True(errors.Is(err, imagegen.ErrInvalidParams))
	}
	is.Equal(reads.n.Load(), int64(2)) // once more, a second on
}
