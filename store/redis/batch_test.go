package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// Successes that arrive together share one script run, each still checked
// against its own fencing token; after the server forgot its scripts
// (SCRIPT FLUSH, as after a restart) each run goes again and succeeds.
func TestConcurrentCompletesEachCheckTheirLease(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	mr := miniredis.RunT(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := redisstore.New(rdb, redisstore.Config{})
	is.NoErr(err)
	const n = 24
	_, err = s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "u", Kind: imagegen.LedgerGrant, Amount: n, Ref: "g"})
	is.NoErr(err)
	for i := range n {
		_, err := s.CreateTask(ctx, &imagegen.Task{ID: fmt.Sprintf("t%02d", i), Owner: "u", Cost: 1, Model: "m",
			Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}, imagegen.CreateParams{})
		is.NoErr(err)
	}
	claimed, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: n})
	is.NoErr(err)
	is.Equal(len(claimed), n)
	is.NoErr(rdb.ScriptFlush(ctx).Err())

	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, c := range claimed {
		attempt := c.Attempt
		if i%4 == 0 {
			attempt++ // not the holder: refused alone
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.CompleteTask(ctx, c.ID, attempt, []imagegen.Image{{ID: "img-" + c.ID, Owner: "u", ContentType: "image/png", Size: 1}}, nil)
		}()
	}
	wg.Wait()
	for i, c := range claimed {
		task, err := s.Task(ctx, "u", c.ID)
		is.NoErr(err)
		if i%4 == 0 {
			is.True(errors.Is(errs[i], imagegen.ErrLeaseLost))
			is.Equal(task.Status, imagegen.StatusProcessing)
			continue
		}
		is.NoErr(errs[i])
		is.Equal(task.Status, imagegen.StatusSuccess)
		is.Equal(task.Images, []string{"img-" + c.ID})
	}
}
