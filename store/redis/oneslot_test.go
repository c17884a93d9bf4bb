package redis_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
	"github.com/imagegen/imagegen/store/storetest"
)

// TestConformanceOneSlotPerScript runs the suite on a sharded store
// whose every script is declared with a shebang (#!lua), on a Cluster of
// one node that holds every slot. Redis then refuses any command of a
// script on a key whose slot is not that of the script's KEYS (a key
// built inside the script from another shard's tag, say), even when the
// node holds both slots: on a Cluster of several masters such a key
// fails only when its slot is on another node, and silently works (and
// breaks at the next resharding) when it is on the same one. The
// shebang changes nothing else that the store's scripts use.
func TestConformanceOneSlotPerScript(t *testing.T) {
	srv := redistest.StartServer(t, 0, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	ctx := context.Background()
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer admin.Close()
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyNoError(t, 20*time.Second, "the one-node cluster is ok", func() error {
		info, err := admin.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("not ok yet: %v", err)
		}
		return nil
	})
	rdb := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{srv.Addr()}})
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(shebangHook())

	// The detector detects: a script of two tags' keys, one built inside.
	err := goredis.NewScript(`return redis.call('GET', (string.gsub(KEYS[1], '{a}', '{b}')))`).Run(ctx, rdb, []string{"{a}:x"}).Err()
	if err == nil || !strings.Contains(err.Error(), "slot") {
		t.Fatalf("a script on another slot's key: %v; want refused", err)
	}

	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := imagegentest.NewClock(time.Time{})
		store := newIsolated(t, rdb, redisstore.Config{Clock: clock, Retention: retention})
		return storetest.Harness{Store: store, Advance: clock.Advance, Retention: retention, Sharded: true}
	})
}

// shebangHook sends every script with "#!lua\n" before it: EVAL and
// SCRIPT LOAD carry the new text, EVALSHA the new text's digest.
func shebangHook() redistest.Hook {
	var mu sync.Mutex
	digests := map[string]string{} // the text's digest → the new text's
	rewrite := func(src string) string {
		if strings.HasPrefix(src, "#!") {
			return src
		}
		out := "#!lua\n" + src
		old, new := sha1.Sum([]byte(src)), sha1.Sum([]byte(out))
		mu.Lock()
		digests[hex.EncodeToString(old[:])] = hex.EncodeToString(new[:])
		mu.Unlock()
		return out
	}
	return redistest.Hook{Before: func(cmd goredis.Cmder) error {
		args := cmd.Args()
		switch strings.ToLower(cmd.Name()) {
		case "eval", "eval_ro":
			args[1] = rewrite(args[1].(string))
		case "evalsha", "evalsha_ro":
			mu.Lock()
			if d, ok := digests[fmt.Sprint(args[1])]; ok {
				args[1] = d
			}
			mu.Unlock()
		case "script":
			if len(args) == 3 && strings.EqualFold(fmt.Sprint(args[1]), "load") {
				args[2] = rewrite(args[2].(string))
			}
		}
		return nil
	}}
}
