package redis_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// A claim returns a task's strings whole, NULs and all: the claim
// script joins a claimed task's values with NULs, so a task whose
// strings hold one must come back some other way (and the last error,
// the last value, may hold them anyway).
func TestClaimKeepsStringsWithNULs(t *testing.T) {
	stores := map[string]func(t *testing.T) *redisstore.Store{
		"miniredis": func(t *testing.T) *redisstore.Store {
			rdb := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			s, err := redisstore.New(rdb, redisstore.Config{Retention: retention})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	if os.Getenv("IMAGEGEN_TEST_REDIS") != "" {
		stores["redis"] = func(t *testing.T) *redisstore.Store {
			return newIsolated(t, realRedis(t), redisstore.Config{Retention: retention})
		}
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct{ owner, model, rid, lastErr string }{
				{"plain", "m", "r", "e\x00rror"},
				{"own\x00er", "m", "", "e"},
				{"o", "mo\x00del", "r\x00id", "\x00"},
			} {
				is := is.New(t)
				ctx := context.Background()
				s := open(t)
				_, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: tc.owner, Kind: imagegen.LedgerGrant, Amount: 5, Ref: "g"})
				is.NoErr(err)
				task := &imagegen.Task{ID: "t\x00" + tc.owner, Owner: tc.owner, Model: tc.model, RequestID: tc.rid, Cost: 2,
					Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p\x00"}}
				_, err = s.CreateTask(ctx, task, imagegen.CreateParams{})
				is.NoErr(err)
				c, err := s.ClaimTask(ctx, time.Minute)
				is.NoErr(err)
				is.NoErr(s.RetryTask(ctx, c.ID, c.Attempt, 0, tc.lastErr))
				c, err = s.ClaimTask(ctx, time.Minute)
				is.NoErr(err)
				stored, err := s.TaskByID(ctx, task.ID)
				is.NoErr(err)
				is.Equal(c.ID, task.ID)
				is.Equal(c.Owner, tc.owner)
				is.Equal(c.Model, tc.model)
				is.Equal(c.RequestID, tc.rid)
				is.Equal(c.LastError, tc.lastErr)
				is.Equal(c.Request.Prompt, "p\x00")
				is.Equal(c.Attempt, 2)
				is.Equal(c.Cost, int64(2))
				is.Equal(c.Status, imagegen.StatusProcessing)
				is.Equal(*c, *stored) // the claim's answer is the task as stored
			}
		})
	}
}
