package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// behindDropper returns a store (under a prefix of its own) on the
// Redis named by IMAGEGEN_TEST_REDIS, reached through a proxy that drops
// the reply of a command when armed, and the proxy. Its client is
// go-redis's default, which sends a command again when its connection
// breaks: a script whose reply is lost runs twice.
func behindDropper(t *testing.T, o redisstore.Config) (*redisstore.Store, *redistest.ReplyDropper) {
	t.Helper()
	opt := redistest.Options(t)
	p := redistest.StartReplyDropper(t, opt.Addr)
	opt.Addr = p.Addr
	rdb := redistest.NewClient(t, opt)
	return newIsolated(t, rdb, o), p
}

// pendingTask grants owner "u" 10 credits on s and submits a task of
// cost for it: the start of each test here.
func pendingTask(t *testing.T, s *redisstore.Store, cost int64) *imagegen.Task {
	t.Helper()
	ctx := context.Background()
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	task := &imagegen.Task{ID: imagegen.NewOwnedID("u"), Owner: "u", Cost: cost, Model: "m",
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
	if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
		t.Fatal(err)
	}
	return task
}

// claimedTask is pendingTask of cost, claimed by a worker: it returns
// the task and its claim.
func claimedTask(t *testing.T, s *redisstore.Store, cost int64) (task, claim *imagegen.Task) {
	t.Helper()
	task = pendingTask(t, s, cost)
	claim, err := s.ClaimTask(context.Background(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if claim.ID != task.ID {
		t.Fatalf("claimed %s, not the task %s", claim.ID, task.ID)
	}
	return task, claim
}

// failedTask is claimedTask of cost 3, failed by its worker (refunded):
// the task an operator requeues. It returns the task and its claim.
func failedTask(t *testing.T, s *redisstore.Store) (task, claim *imagegen.Task) {
	t.Helper()
	task, claim = claimedTask(t, s, 3)
	if _, err := s.FailTask(context.Background(), claim.ID, claim.Attempt, imagegen.Failure{Code: imagegen.CodeInternal, Message: "the model broke"}); err != nil {
		t.Fatal(err)
	}
	return task, claim
}

// A submit whose script ran but whose reply was lost (the connection
// broke after Redis ran it) used to fail: go-redis sent the script
// again, which found the task's id taken and answered "task exists",
// so the API answered 500 for a task it had made and charged, and a
// client that submitted again paid twice. The run sent again now knows
// its own task and answers the submit as made, charged once.
func TestCreateSentAgainAfterLostReply(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, p := behindDropper(t, redisstore.Config{Retention: retention})
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"})
	is.NoErr(err)
	task := &imagegen.Task{ID: imagegen.NewOwnedID("u"), Owner: "u", Cost: 3, Model: "m", RequestID: "r1",
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
	p.Arm(task.ID)
	bal, err := s.CreateTask(ctx, task, imagegen.CreateParams{})
	is.Equal(p.Dropped(), 1) // the reply was lost, and the script sent again
	is.NoErr(err)            // the task is made: the submit says so
	is.Equal(bal, int64(7))  // charged once
	is.Equal(task.Status, imagegen.StatusPending)
	got, err := s.Task(ctx, "u", task.ID)
	is.NoErr(err)
	is.Equal(got.Status, imagegen.StatusPending)
	b, err := s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(7))
	ledger, err := s.Ledger(ctx, "u")
	is.NoErr(err)
	is.Equal(len(ledger), 2) // the grant and one charge

	// A task made by another submit with the same id is still refused.
	again := *task
	again.Request.Prompt = "another"
	_, err = s.CreateTask(ctx, &again, imagegen.CreateParams{})
	is.True(err != nil)
	b, err = s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(7))
}

// A success whose script ran but whose reply was lost used to answer
// ErrLeaseLost: go-redis sent the script again, which found the task
// finished. The service takes ErrLeaseLost to mean that no record will
// point at the images and deletes their bytes (imagegen's complete,
// the path of every store with WaitReplicas or Blobs of its own): the
// task was a success whose images were gone. The run sent again now
// knows its own success by its image ids and answers it as recorded.
func TestCompleteSentAgainAfterLostReply(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, p := behindDropper(t, redisstore.Config{Retention: retention})
	_, c := claimedTask(t, s, 1)
	img := imagegen.Image{ID: imagegen.NewOwnedID("u"), TaskID: c.ID, Owner: "u", ContentType: "image/png", Size: 1}
	p.Arm(img.ID)
	err := s.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{img}, nil)
	is.Equal(p.Dropped(), 1) // the reply was lost, and the script sent again
	is.NoErr(err)            // recorded: not ErrLeaseLost
	got, err := s.Task(ctx, "u", c.ID)
	is.NoErr(err)
	is.Equal(got.Status, imagegen.StatusSuccess)
	is.Equal(got.Images, []string{img.ID})

	// The holder's other success, with other images, is still refused.
	other := imagegen.Image{ID: imagegen.NewOwnedID("u"), TaskID: c.ID, Owner: "u", ContentType: "image/png", Size: 1}
	is.True(errors.Is(s.CompleteTask(ctx, c.ID, c.Attempt, []imagegen.Image{other}, nil), imagegen.ErrLeaseLost))
}

// A claim whose script ran but whose reply was lost used to claim twice:
// go-redis sent the script again, which took the next tasks of the
// queue. The worker got those; the tasks of the first run were left
// processing with no worker until their lease ended, each with an
// attempt used up (a task could reach MaxAttempts and fail for
// nothing). The run sent again now finds the record of its first run
// and answers with its tasks, claiming no more.
// (A task whose id holds a NUL comes back as a list: "odd ids".)
func TestClaimSentAgainAfterLostReply(t *testing.T) {
	for name, id := range map[string]func() string{
		"ids":     func() string { return imagegen.NewOwnedID("u") },
		"odd ids": func() string { return imagegen.NewOwnedID("u") + "\x00ñ" },
	} {
		t.Run(name, func(t *testing.T) { claimSentAgain(t, id) })
	}
}

func claimSentAgain(t *testing.T, newID func() string) {
	is := is.New(t)
	ctx := context.Background()
	s, p := behindDropper(t, redisstore.Config{Retention: retention})
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"})
	is.NoErr(err)
	var ids []string
	for range 3 {
		task := &imagegen.Task{ID: newID(), Owner: "u", Cost: 1, Model: "m",
			Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
		_, err := s.CreateTask(ctx, task, imagegen.CreateParams{})
		is.NoErr(err)
		ids = append(ids, task.ID)
	}
	const lease = time.Hour + 4321*time.Millisecond // "3604321": marks the claim's command
	p.Arm("3604321")
	got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 2})
	is.Equal(p.Dropped(), 1) // the reply was lost, and the script sent again
	is.NoErr(err)
	is.Equal(len(got), 2) // the first run's two tasks, not the one left
	first := map[string]bool{ids[0]: true, ids[1]: true}
	for _, c := range got {
		is.True(first[c.ID]) // the first two queued (in some order)
		delete(first, c.ID)
		is.Equal(c.Attempt, 1)
		is.Equal(c.Status, imagegen.StatusProcessing)
		is.True(!c.LeaseUntil.IsZero())
		is.Equal(c.Request.Prompt, "p")
	}
	// The third task is still pending: the next claim takes it.
	next, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 2})
	is.NoErr(err)
	is.Equal(len(next), 1)
	is.Equal(next[0].ID, ids[2])
	// The holders of the first claim finish their tasks.
	for _, c := range got {
		is.NoErr(s.CompleteTask(ctx, c.ID, c.Attempt, nil, nil))
	}
}

// A cancel whose script ran but whose reply was lost used to answer
// ErrInvalidTransition (the API: 409) for a cancel that worked:
// go-redis sent the script again, which found the task finished. The
// run sent again now knows its own cancel and answers it as done, with
// its refund.
func TestCancelSentAgainAfterLostReply(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, p := behindDropper(t, redisstore.Config{Retention: retention})
	task := pendingTask(t, s, 3)
	p.Arm(imagegen.CancelledMessage)
	refund, err := s.CancelTask(ctx, "u", task.ID, imagegen.CancelParams{})
	is.Equal(p.Dropped(), 1) // the reply was lost, and the script sent again
	is.NoErr(err)            // cancelled: not ErrInvalidTransition
	is.Equal(refund, int64(3))
	b, err := s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(10)) // refunded once

	// Another cancel of the finished task is still refused.
	_, err = s.CancelTask(ctx, "u", task.ID, imagegen.CancelParams{})
	is.True(errors.Is(err, imagegen.ErrInvalidTransition))
}

// A grant whose script ran but whose reply was lost used to answer
// ErrDuplicateEntry (the service: AlreadyApplied) for the grant that
// had just applied: go-redis sent the script again, which found its
// reference used. The run sent again now finds its own entry and
// answers applied.
func TestGrantSentAgainAfterLostReply(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, p := behindDropper(t, redisstore.Config{Retention: retention})
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 5, Ref: "grant:other"})
	is.NoErr(err)
	p.Arm("grant:lost-reply")
	bal, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "grant:lost-reply"})
	is.Equal(p.Dropped(), 1) // the reply was lost, and the script sent again
	is.NoErr(err)            // applied: not ErrDuplicateEntry
	is.Equal(bal, int64(15)) // once
	ledger, err := s.Ledger(ctx, "u")
	is.NoErr(err)
	is.Equal(len(ledger), 2)

	// The same reference in another call is still a duplicate.
	bal, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "grant:lost-reply"})
	is.True(errors.Is(err, imagegen.ErrDuplicateEntry))
	is.Equal(bal, int64(15))
}

// A worker's retry or release whose script ran but whose reply was lost
// used to answer ErrLeaseLost: go-redis sent the script again, which
// found the task given back. Nothing was wrong in the store, but the
// worker logged that another worker owned the task. The run sent again
// now knows its own call and answers it as done; another attempt's call
// still gets ErrLeaseLost.
func TestGiveBackSentAgainAfterLostReply(t *testing.T) {
	for name, giveBack := range map[string]func(ctx context.Context, s *redisstore.Store, c *imagegen.Task) error{
		"retry": func(ctx context.Context, s *redisstore.Store, c *imagegen.Task) error {
			return s.RetryTask(ctx, c.ID, c.Attempt, time.Millisecond, "the provider failed")
		},
		"release": func(ctx context.Context, s *redisstore.Store, c *imagegen.Task) error {
			return s.ReleaseTask(ctx, c.ID, c.Attempt)
		},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			ctx := context.Background()
			s, p := behindDropper(t, redisstore.Config{Retention: retention})
			task, c := claimedTask(t, s, 1)
			p.Arm(task.ID)
			is.NoErr(giveBack(ctx, s, c)) // not ErrLeaseLost
			is.Equal(p.Dropped(), 1)      // the reply was lost, and the script sent again
			got, err := s.Task(ctx, "u", task.ID)
			is.NoErr(err)
			is.Equal(got.Status, imagegen.StatusPending) // given back, once
			err = giveBack(ctx, s, c)                    // a later call of the same attempt: no longer the holder
			is.True(errors.Is(err, imagegen.ErrLeaseLost))
		})
	}
}

// An idempotent request's begin whose script ran but whose reply was
// lost used to answer "in flight": go-redis sent the script again, which
// found the record its first run had just made, so the request was
// refused as a duplicate of itself and the key stayed blocked, with no
// request to finish it, until the record expired. The run sent again now
// knows its own record and answers as the first run did.
func TestBeginIdempotentSentAgainAfterLostReply(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, p := behindDropper(t, redisstore.Config{Retention: retention})
	p.Arm("idem-lost-reply")
	rec, err := s.BeginIdempotent(ctx, "u", "idem-lost-reply", "fp1", "t1", time.Minute, time.Hour)
	is.Equal(p.Dropped(), 1) // the reply was lost, and the script sent again
	is.NoErr(err)
	is.Equal(rec, nil) // recorded by this call: it goes on
	is.NoErr(s.FinishIdempotent(ctx, "u", "idem-lost-reply", "fp1", 202, []byte(`{"ok":true}`), time.Hour))
	rec, err = s.BeginIdempotent(ctx, "u", "idem-lost-reply", "fp1", "t1", time.Minute, time.Hour)
	is.NoErr(err)
	is.True(rec != nil && rec.Done && rec.Status == 202) // the stored response, for the next call

	// Another call with the key while one is in flight is still told so.
	_, err = s.BeginIdempotent(ctx, "u", "idem-other", "fp2", "t2", time.Minute, time.Hour)
	is.NoErr(err)
	rec, err = s.BeginIdempotent(ctx, "u", "idem-other", "fp2", "t2", time.Minute, time.Hour)
	is.NoErr(err)
	is.True(rec != nil && !rec.Done)
}

// The renewal of an expired in-flight record (for its caller to settle)
// whose reply was lost: the run sent again finds the record in flight
// with its own token, but naming the earlier request's task, not its
// own, and answers it expired again, as the first run did. Taken for
// a record this call began, the caller would submit afresh, under its
// own task id, while the earlier request's task may exist.
func TestBeginIdempotentRenewalSentAgainAfterLostReply(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clock := imagegentest.NewClock(time.Time{})
	s, p := behindDropper(t, redisstore.Config{Clock: clock, Retention: retention})
	rec, err := s.BeginIdempotent(ctx, "u", "idem-renewed", "fp1", "t1", time.Minute, time.Hour)
	is.NoErr(err)
	is.Equal(rec, nil)
	clock.Advance(2 * time.Minute)
	p.Arm("idem-renewed")
	rec, err = s.BeginIdempotent(ctx, "u", "idem-renewed", "fp1", "t2", time.Minute, time.Hour)
	is.Equal(p.Dropped(), 1) // the reply was lost, and the script sent again
	is.NoErr(err)
	is.True(rec != nil && rec.Expired) // to be settled
	is.Equal(rec.TaskID, "t1")         // the earlier request's task
	is.Equal(rec.Fingerprint, "fp1")
}

// A worker's failure whose script ran but whose reply was lost used to
// answer ErrLeaseLost: go-redis sent the script again, which found the
// task failed. Nothing was undone (the refund was made once), but the
// worker logged that another worker owned the task, and counted neither
// the failure nor its refund. The run sent again now knows its own
// failure and answers it as done, with its refund.
func TestFailSentAgainAfterLostReply(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, p := behindDropper(t, redisstore.Config{Retention: retention})
	_, c := claimedTask(t, s, 3)
	p.Arm("the model broke (lost reply)")
	refund, err := s.FailTask(ctx, c.ID, c.Attempt, imagegen.Failure{Code: imagegen.CodeInternal, Message: "the model broke (lost reply)"})
	is.Equal(p.Dropped(), 1) // the reply was lost, and the script sent again
	is.NoErr(err)            // failed: not ErrLeaseLost
	is.Equal(refund, int64(3))
	b, err := s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(10)) // refunded once

	// Another failure of the finished task is still a lost lease.
	_, err = s.FailTask(ctx, c.ID, c.Attempt, imagegen.Failure{Code: imagegen.CodeInternal, Message: "again"})
	is.True(errors.Is(err, imagegen.ErrLeaseLost))
}

// A claim whose reply was lost and whose EVALSHA, sent again, was
// answered NOSCRIPT (a failover to a node that has not loaded the
// script, the first run's node gone; here a SCRIPT FLUSH between the
// two sends) used to claim anew: the EVAL that followed was written as
// a first send, so it did not look for the first run's tasks and took
// the next ones, leaving those processing with no worker. An EVALSHA
// written more than once may have run, so the EVAL after it stays
// marked as sent again.
func TestClaimSentAgainToAServerWithoutTheScript(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	srv := redistest.StartServer(t, 0) // its scripts are flushed
	p := redistest.StartReplyDropper(t, srv.Addr())
	s := newIsolated(t, redistest.NewClient(t, &goredis.Options{Addr: p.Addr}), redisstore.Config{Retention: retention})
	_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"})
	is.NoErr(err)
	var ids []string
	for range 4 {
		task := &imagegen.Task{ID: imagegen.NewOwnedID("u"), Owner: "u", Cost: 1, Model: "m",
			Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
		_, err := s.CreateTask(ctx, task, imagegen.CreateParams{})
		is.NoErr(err)
		ids = append(ids, task.ID)
	}
	// A first claim loads the script: the next one's EVALSHA runs.
	first, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 1})
	is.NoErr(err)
	is.Equal(first[0].ID, ids[0])
	admin := srv.Client(t)
	const lease = time.Hour + 4321*time.Millisecond // "3604321": marks the claim's command
	p.ArmThen("3604321", func() { is.NoErr(admin.ScriptFlush(ctx).Err()) })
	got, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: 2})
	is.Equal(p.Dropped(), 1) // the reply was lost, and the script sent again
	is.NoErr(err)
	is.Equal(len(got), 2) // the first run's two tasks
	mine := map[string]bool{ids[1]: true, ids[2]: true}
	for _, c := range got {
		is.True(mine[c.ID])
		delete(mine, c.ID)
	}
	next, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 2})
	is.NoErr(err)
	is.Equal(len(next), 1) // the one left
	is.Equal(next[0].ID, ids[3])
}

// A new key whose script ran but whose reply was lost used to answer
// ErrKeyExists: go-redis sent the script again, which found the record
// its first run had just stored, so the key's creation failed (a 500)
// though the key was live, and a sharded store, which lists the key in
// its owner's shard first, unlisted it again: a live key its owner could
// neither see nor revoke. The run sent again now knows its own key and
// answers it stored, listed once; another key of the same hash is still
// refused.
func TestPutKeySentAgainAfterLostReply(t *testing.T) {
	for _, shards := range []int{1, 4} {
		t.Run(fmt.Sprint(shards, " shards"), func(t *testing.T) {
			is := is.New(t)
			ctx := context.Background()
			s, p := behindDropper(t, redisstore.Config{Retention: retention, Shards: shards})
			k := imagegen.APIKey{ID: "key_lost_reply", Owner: "u", Hash: imagegen.HashAPIKey("lost-reply-key-0123456789"),
				Hint: "lost…", Name: "lost reply", CreatedAt: time.Now()}
			p.Arm("lost reply")
			is.NoErr(s.PutKey(ctx, k)) // stored: not ErrKeyExists
			is.Equal(p.Dropped(), 1)   // the reply was lost, and the script sent again
			keys, err := s.Keys(ctx, "u")
			is.NoErr(err)
			is.Equal(len(keys), 1) // listed, once
			is.Equal(keys[0].ID, k.ID)
			got, err := s.KeyByHash(ctx, k.Hash)
			is.NoErr(err)
			is.Equal(got.ID, k.ID)

			// Another key of that hash, or the same record put again, is still refused.
			is.True(errors.Is(s.PutKey(ctx, imagegen.APIKey{ID: "key_other", Owner: "u", Hash: k.Hash}), imagegen.ErrKeyExists))
			is.True(errors.Is(s.PutKey(ctx, k), imagegen.ErrKeyExists))
			keys, err = s.Keys(ctx, "u")
			is.NoErr(err)
			is.Equal(len(keys), 1)
		})
	}
}

// An operator's requeue whose script ran but whose reply was lost used
// to answer ErrInvalidTransition: go-redis sent the script again, which
// found the task pending (the first run had requeued it), so the
// operator was told that the task was not failed though it was back in
// the queue, recharged. The run sent again now knows its own requeue (it
// leaves its call's token on the task, as a failure does) and answers it
// as done, charged once; a requeue of a task that is not failed is still
// refused.
func TestRequeueSentAgainAfterLostReply(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, p := behindDropper(t, redisstore.Config{Retention: retention})
	task, c := failedTask(t, s)
	p.Arm(imagegen.RerefundRef(task.ID, c.Attempt)) // the requeue script's argument, not its read of the task
	is.NoErr(s.RequeueTask(ctx, task.ID, true))     // requeued: not ErrInvalidTransition
	is.Equal(p.Dropped(), 1)                        // the reply was lost, and the script sent again
	got, err := s.Task(ctx, "u", task.ID)
	is.NoErr(err)
	is.Equal(got.Status, imagegen.StatusPending)
	b, err := s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(7)) // charged, refunded, charged again once
	ledger, err := s.Ledger(ctx, "u")
	is.NoErr(err)
	is.Equal(len(ledger), 4) // the grant, the charge, the refund and one recharge

	// Another requeue of the task, pending now, is still refused.
	is.True(errors.Is(s.RequeueTask(ctx, task.ID, true), imagegen.ErrInvalidTransition))
	b, err = s.Balance(ctx, "u")
	is.NoErr(err)
	is.Equal(b, int64(7))
	// The task is claimed as any other.
	c, err = s.ClaimTask(ctx, time.Minute)
	is.NoErr(err)
	is.Equal(c.ID, task.ID)
}

// A key deletion whose script ran but whose reply was lost used to
// answer ErrKeyNotFound: go-redis sent the script again, which found
// the record gone (the first run had deleted it), so the owner was told
// there was no such key though its deletion had worked. The run sent
// again now finds the mark its first run left (the call's token, kept a
// few minutes under the key's hash, in the store's keys) and answers
// deleted, unlisted once; deleting the key again, or a key that never
// was, still answers ErrKeyNotFound.
func TestDeleteKeySentAgainAfterLostReply(t *testing.T) {
	for _, shards := range []int{1, 4} {
		t.Run(fmt.Sprint(shards, " shards"), func(t *testing.T) {
			is := is.New(t)
			ctx := context.Background()
			s, p := behindDropper(t, redisstore.Config{Retention: retention, Shards: shards})
			secret := "delete-lost-reply-" + uuid.NewString()
			k := imagegen.APIKey{ID: "key_delete_lost_reply", Owner: "u", Hash: imagegen.HashAPIKey(secret),
				Hint: "dele…", Name: "deleted", CreatedAt: time.Now()}
			is.NoErr(s.PutKey(ctx, k))
			is.NoErr(s.PutKey(ctx, imagegen.APIKey{ID: "key_kept", Owner: "u", Hash: imagegen.HashAPIKey(secret + "-kept"), CreatedAt: time.Now()}))
			is.NoErr(s.RevokeKey(ctx, "u", k.ID))
			p.Arm(k.ID)                           // the delete script's argument, not its reads of the owner's keys
			is.NoErr(s.DeleteKey(ctx, "u", k.ID)) // deleted: not ErrKeyNotFound
			is.Equal(p.Dropped(), 1)              // the reply was lost, and the script sent again
			keys, err := s.Keys(ctx, "u")
			is.NoErr(err)
			is.Equal(len(keys), 1) // unlisted; the other key kept
			is.Equal(keys[0].ID, "key_kept")
			_, err = s.KeyByHash(ctx, k.Hash)
			is.True(errors.Is(err, imagegen.ErrKeyNotFound))

			// What the deletion left naming the key's hash is the store's
			// (its cleanup deletes it) and short-lived.
			rdb := redistest.Connect(t)
			mine := map[string]bool{}
			for _, key := range redistest.Keys(t, rdb, s.KeyPattern()) {
				mine[key] = true
			}
			for _, key := range redistest.Keys(t, rdb, "*"+k.Hash+"*") {
				is.True(mine[key]) // under the store's KeyPattern
				ttl, err := rdb.PTTL(ctx, key).Result()
				is.NoErr(err)
				is.True(ttl > 0 && ttl <= 10*time.Minute) // expiring within minutes
			}

			// Deleting it again, or a key that never was, is still not found.
			is.True(errors.Is(s.DeleteKey(ctx, "u", k.ID), imagegen.ErrKeyNotFound))
			is.True(errors.Is(s.DeleteKey(ctx, "u", "key_never"), imagegen.ErrKeyNotFound))
			keys, err = s.Keys(ctx, "u")
			is.NoErr(err)
			is.Equal(len(keys), 1)
		})
	}
}

// A webhook claim whose script ran but whose reply was lost used to
// leave the deliveries it leased waiting out their lease: go-redis sent
// the script again, which found them leased (not due) and answered
// none, so the dispatcher sent nothing and the callbacks went out a
// lease later. The run sent again now finds the record its first run
// left (the call's token, kept for the lease) and answers with the
// deliveries that run leased, under the same claimed IDs, leasing no
// more.
func TestClaimWebhooksSentAgainAfterLostReply(t *testing.T) {
	for _, shards := range []int{1, 4} {
		t.Run(fmt.Sprint(shards, " shards"), func(t *testing.T) {
			is := is.New(t)
			ctx := context.Background()
			clock := imagegentest.NewClock(time.Time{})
			s, p := behindDropper(t, redisstore.Config{Retention: retention, Shards: shards, Clock: clock})
			_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: 10, Ref: "g"})
			is.NoErr(err)
			for range 3 {
				task := &imagegen.Task{ID: imagegen.NewOwnedID("u"), Owner: "u", Cost: 1, Model: "m",
					Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", CallbackURL: "https://example.com/hook"}}
				_, err := s.CreateTask(ctx, task, imagegen.CreateParams{})
				is.NoErr(err)
				c, err := s.ClaimTask(ctx, time.Minute)
				is.NoErr(err)
				is.NoErr(s.CompleteTask(ctx, c.ID, c.Attempt, nil, nil)) // its delivery is due
			}
			const lease = time.Hour + 4321*time.Millisecond // "3604321": marks the claim's command
			p.Arm("3604321")
			got, err := s.ClaimWebhooks(ctx, lease, 2)
			is.Equal(p.Dropped(), 1) // the reply was lost, and the script sent again
			is.NoErr(err)
			is.Equal(len(got), 2) // the first run's deliveries, not none
			is.True(got[0].TaskID != got[1].TaskID)
			for _, d := range got {
				is.Equal(d.Owner, "u")
				is.Equal(d.URL, "https://example.com/hook")
				is.Equal(d.Event, imagegen.EventCompleted)
			}
			// The one left is due: the next claim takes it, and only it.
			next, err := s.ClaimWebhooks(ctx, time.Minute, 10)
			is.NoErr(err)
			is.Equal(len(next), 1)
			is.True(next[0].TaskID != got[0].TaskID && next[0].TaskID != got[1].TaskID)
			// The first claim's IDs are its leases: acknowledged, the
			// deliveries are gone, and none is due once the leases end.
			for _, d := range append(got, next...) {
				is.NoErr(s.AckWebhook(ctx, d.ID))
			}
			clock.Advance(2 * lease)
			left, err := s.ClaimWebhooks(ctx, time.Minute, 10)
			is.NoErr(err)
			is.Equal(len(left), 0)
		})
	}
}

// An operator's requeue whose reply was lost, and the task moved on
// before go-redis sent the script again: what the task did since must
// not change the answer, nor make the requeue run twice. The requeue
// used to find its own call in cx, which a cancel, a worker's failure,
// retry or release write over: a resend after a cancel or a worker's
// retry answered ErrInvalidTransition for a requeue that had happened,
// and one after the task failed again requeued and recharged it a
// second time.
func TestRequeueSentAgainAfterTheTaskMovedOn(t *testing.T) {
	for name, c := range map[string]struct {
		moveOn     func(ctx context.Context, s *redisstore.Store, id string) error
		status     imagegen.Status
		balance    int64
		ledgerSize int
	}{
		"cancelled": {
			moveOn: func(ctx context.Context, s *redisstore.Store, id string) error {
				_, err := s.CancelTask(ctx, "u", id, imagegen.CancelParams{})
				return err
			},
			status: imagegen.StatusFailed, balance: 10, ledgerSize: 5, // grant, charge, refund, recharge, the cancel's refund
		},
		"failed again": {
			moveOn: func(ctx context.Context, s *redisstore.Store, id string) error {
				c, err := s.ClaimTask(ctx, time.Minute)
				if err != nil {
					return err
				}
				_, err = s.FailTask(ctx, c.ID, c.Attempt, imagegen.Failure{Code: imagegen.CodeInternal, Message: "broke again"})
				return err
			},
			status: imagegen.StatusFailed, balance: 10, ledgerSize: 5, // grant, charge, refund, recharge, the refund: not requeued twice
		},
		"retried by its worker": {
			moveOn: func(ctx context.Context, s *redisstore.Store, id string) error {
				c, err := s.ClaimTask(ctx, time.Minute)
				if err != nil {
					return err
				}
				return s.RetryTask(ctx, c.ID, c.Attempt, time.Millisecond, "the provider failed")
			},
			status: imagegen.StatusPending, balance: 7, ledgerSize: 4,
		},
		"succeeded": {
			moveOn: func(ctx context.Context, s *redisstore.Store, id string) error {
				c, err := s.ClaimTask(ctx, time.Minute)
				if err != nil {
					return err
				}
				return s.CompleteTask(ctx, c.ID, c.Attempt, nil, nil)
			},
			status: imagegen.StatusSuccess, balance: 7, ledgerSize: 4,
		},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			ctx := context.Background()
			s, p := behindDropper(t, redisstore.Config{Retention: retention})
			task, cl := failedTask(t, s)
			p.ArmThen(imagegen.RerefundRef(task.ID, cl.Attempt), func() { // between the first run and the send again
				if err := c.moveOn(ctx, s, task.ID); err != nil {
					t.Errorf("moving the task on: %v", err)
				}
			})
			is.NoErr(s.RequeueTask(ctx, task.ID, true)) // requeued: the first run did it
			is.Equal(p.Dropped(), 1)
			got, err := s.Task(ctx, "u", task.ID)
			is.NoErr(err)
			is.Equal(got.Status, c.status) // as the task moved on: not requeued again
			b, err := s.Balance(ctx, "u")
			is.NoErr(err)
			is.Equal(b, c.balance) // recharged once
			ledger, err := s.Ledger(ctx, "u")
			is.NoErr(err)
			is.Equal(len(ledger), c.ledgerSize)
		})
	}
}

// A worker's failure whose reply was lost, and an operator's requeue of
// the task before go-redis sent the failure again: the failure ran, and
// its run sent again answers so, with its refund. Before the requeue
// left its token in cx (where the failure keeps its own), it did; since,
// it answered ErrLeaseLost.
func TestFailSentAgainAfterARequeue(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, p := behindDropper(t, redisstore.Config{Retention: retention})
	task, c := claimedTask(t, s, 3)
	p.ArmThen("the model broke (lost reply, requeued)", func() {
		if err := s.RequeueTask(ctx, task.ID, false); err != nil {
			t.Errorf("requeue: %v", err)
		}
	})
	refund, err := s.FailTask(ctx, c.ID, c.Attempt, imagegen.Failure{Code: imagegen.CodeInternal, Message: "the model broke (lost reply, requeued)"})
	is.Equal(p.Dropped(), 1)
	is.NoErr(err) // failed: not ErrLeaseLost
	is.Equal(refund, int64(3))
	got, err := s.Task(ctx, "u", task.ID)
	is.NoErr(err)
	is.Equal(got.Status, imagegen.StatusPending) // requeued by the operator
}
