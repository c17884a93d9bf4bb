package memory_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
	"github.com/imagegen/imagegen/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		return storetest.Harness{
			Store:           testenv.Memory(t, memory.Config{Clock: clock, Retention: time.Hour}),
			Advance:         clock.Advance,
			Retention:       time.Hour,
			KeepsChargedIDs: true,
		}
	})
}

// TestRetentionRemovesTheDefaultBlobs: the store's own in-memory bytes go
// with their records, with no sweep.
func TestRetentionRemovesTheDefaultBlobs(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Time{})
	s := testenv.Memory(t, memory.Config{Clock: clock, Retention: time.Hour})
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 1, Ref: "g"})
	is.NoErr(err)
	_, err = s.CreateTask(ctx, &imagegen.Task{ID: "t", Owner: "u", Cost: 1, Model: "m", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}, imagegen.CreateParams{})
	is.NoErr(err)
	c, err := s.ClaimTask(ctx, time.Minute)
	is.NoErr(err)
	is.NoErr(s.Blobs().Put(ctx, "img", strings.NewReader("png"), 3, "image/png"))
	is.NoErr(s.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{{ID: "img", ContentType: "image/png", Size: 3}}, nil))

	clock.Advance(time.Hour - time.Second)
	_, err = s.Blobs().Stat(ctx, "img")
	is.NoErr(err) // kept while its record lives
	clock.Advance(time.Second)
	_, _ = s.Len() // any call removes what expired
	_, err = s.Blobs().Stat(ctx, "img")
	is.True(errors.Is(err, imagegen.ErrBlobNotFound))
}

// New refuses what the other backends refuse, naming the field.
func TestNewRefusesANegativeRetention(t *testing.T) {
	_, err := memory.New(memory.Config{Retention: -time.Second})
	if err == nil || !strings.Contains(err.Error(), "Config.Retention") {
		t.Fatalf("New with a negative retention: got %v, want an error naming Config.Retention", err)
	}
}

// A long ledger (the entries are kept in chunks of 1024) reads back whole
// and in order, by Ledger and page by page across the chunks' edges.
func TestLongLedgerReadsBackInOrder(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := testenv.Memory(t, memory.Config{})
	const n = 2500
	for i := range n {
		_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 1, Ref: "g" + strconv.Itoa(i)})
		is.NoErr(err)
	}
	all, err := s.Ledger(ctx, "u")
	is.NoErr(err)
	is.Equal(len(all), n)
	for i, e := range all {
		is.Equal(e.ID, strconv.Itoa(i+1))
		is.Equal(e.Ref, "g"+strconv.Itoa(i))
		is.Equal(e.BalanceAfter, int64(i+1))
		is.Equal(e.Owner, "u")
	}
	seen, cursor := n, ""
	for {
		page, err := s.ListLedger(ctx, "u", 700, cursor)
		is.NoErr(err)
		for _, e := range page.Entries {
			is.Equal(e, all[seen-1]) // newest first
			seen--
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	is.Equal(seen, 0)
}
