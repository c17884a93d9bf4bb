package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
	"github.com/imagegen/imagegen/store/storetest"
)

// TestConformanceSentinel runs the suite through Sentinel (a master, its
// replica and three sentinels that the test starts), every acknowledged
// change waiting for the replica.
func TestConformanceSentinel(t *testing.T) {
	rdb := redistest.StartSentinels(t).Client(t)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		store := newIsolated(t, rdb, redisstore.Config{Clock: clock, Retention: retention, WaitReplicas: 1})
		return storetest.Harness{Store: store, Advance: clock.Advance, Retention: retention}
	})
}

// With WaitReplicas and no replica to confirm, a submit, a ledger entry,
// a success and a cancel answer ErrNotReplicated after WaitTimeout, not
// before and not never; the change itself was made on the master.
func TestNotReplicatedIsAnError(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	rdb := realRedis(t) // a server without replicas
	const wait = 100 * time.Millisecond
	s := newIsolated(t, rdb, redisstore.Config{WaitReplicas: 1, WaitTimeout: wait})

	start := time.Now()
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 5, Ref: "g1"})
	is.True(errors.Is(err, redisstore.ErrNotReplicated))
	is.True(time.Since(start) >= wait)
	b, err := s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(5)) // made on the master, only not confirmed

	_, err = s.CreateTask(ctx, &imagegen.Task{ID: "t1", Owner: "u", Cost: 1, Model: "m",
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}, imagegen.CreateParams{})
	is.True(errors.Is(err, redisstore.ErrNotReplicated))
	_, err = s.CreateTask(ctx, &imagegen.Task{ID: "t2", Owner: "u", Cost: 1, Model: "m",
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}, imagegen.CreateParams{})
	is.True(errors.Is(err, redisstore.ErrNotReplicated))
	c, err := s.ClaimTask(ctx, time.Minute) // a claim does not wait
	is.NoErr(err)
	is.True(errors.Is(s.CompleteTask(ctx, c.ID, c.Attempt, nil, nil), redisstore.ErrNotReplicated))
	is.True(errors.Is(errOf(s.CancelTask(ctx, "u", "t2", imagegen.CancelParams{})), redisstore.ErrNotReplicated))
	b, err = s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(4)) // two charges, one refund
}

// A requeue's recharge, a recovery's failure (and its refund) and a
// key's revocation wait for replicas too: with WaitReplicas and none to
// confirm, each answers ErrNotReplicated, its change made on the master.
func TestNotReplicatedRequeueRecoveryAndRevocation(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	rdb := realRedis(t) // a server without replicas
	clock := imagegentest.NewClock(time.Time{})
	s := newIsolated(t, rdb, redisstore.Config{Clock: clock, WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
	balance := func() int64 {
		b, err := s.Balance(ctx, "u")
		is.NoErr(err)
		return b
	}

	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 5, Ref: "g1"})
	is.True(errors.Is(err, redisstore.ErrNotReplicated))
	for _, id := range []string{"t1", "t2"} {
		_, err = s.CreateTask(ctx, &imagegen.Task{ID: id, Owner: "u", Cost: 1, Model: "m",
			Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}, imagegen.CreateParams{})
		is.True(errors.Is(err, redisstore.ErrNotReplicated))
	}
	is.True(errors.Is(errOf(s.CancelTask(ctx, "u", "t2", imagegen.CancelParams{})), redisstore.ErrNotReplicated))
	is.Equal(balance(), int64(4))

	is.True(errors.Is(s.RequeueTask(ctx, "t2", true), redisstore.ErrNotReplicated))
	is.Equal(balance(), int64(3)) // recharged on the master

	first, err := s.ClaimTask(ctx, time.Minute)
	is.NoErr(err)
	clock.Advance(2 * time.Minute)
	_, err = s.RecoverExpired(ctx, 1) // its one attempt spent: failed and refunded
	is.True(errors.Is(err, redisstore.ErrNotReplicated))
	task, err := s.TaskByID(ctx, first.ID)
	is.NoErr(err)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(balance(), int64(4))

	key := imagegen.APIKey{ID: "k1", Owner: "u", Hash: strings.Repeat("ab", 32), Hint: "igk_…abcd", CreatedAt: clock.Now()}
	is.True(errors.Is(s.PutKey(ctx, key), redisstore.ErrNotReplicated))
	is.True(errors.Is(s.RevokeKey(ctx, "u", "k1"), redisstore.ErrNotReplicated))
	_, err = s.KeyByHash(ctx, key.Hash)
	is.True(errors.Is(err, imagegen.ErrKeyNotFound)) // revoked on the master
}
