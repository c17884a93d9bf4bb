package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// A key of the store to move that expires between MigrateToShards'
// DUMP and its PTTL (a delkey mark, kept 5 minutes; a session, a
// finished task) used to be restored with no TTL at all: PTTL answers
// -2 for a key that is gone, which copyKey took for "no expiry", so the
// copy was kept for ever. It is gone, so nothing is copied.
func TestCopyKeyThatExpiresMeanwhileLeavesNothing(t *testing.T) {
	ctx := context.Background()
	admin := redistest.Connect(t)
	prefix := "{imagegen-test-" + uuid.NewString() + "}"
	t.Cleanup(func() { redistest.DeleteKeys(t, admin, prefix+":*") })
	key, to := prefix+":delkey:h", prefix+":copy:delkey:h"
	if err := admin.Set(ctx, key, "token", 5*time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	src := redistest.NewClient(t, redistest.Options(t))
	src.AddHook(redistest.Hook{After: func(cmd goredis.Cmder) {
		if strings.EqualFold(cmd.Name(), "dump") {
			admin.Del(ctx, key) // it expires now, between the DUMP and the PTTL
		}
	}})
	if err := copyKey(ctx, src, admin, key, to); err != nil {
		t.Fatal(err)
	}
	ttl, err := admin.PTTL(ctx, to).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl == -1 {
		t.Fatalf("the copy of a key that expired meanwhile has no TTL: it is kept for ever")
	}
	if ttl != -2 {
		t.Fatalf("the copy of a key that expired meanwhile exists (PTTL %v)", ttl)
	}
}
