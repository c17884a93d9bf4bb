package redis_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// KeyPattern's matches that OwnsKey keeps are the store's keys and no
// other store's: a sharded store's pattern, "{P[:}]*", matched the keys
// of a store whose prefix is "P:x" ("{P:x}:..."), and a cleanup through
// it (the tests', an operator's tool) deleted that store's data.
func TestKeyPatternAndOwnsKeyTakeOnlyTheStoresKeys(t *testing.T) {
	rdb := realRedis(t)
	ctx := context.Background()
	base := "imagegen-test-" + uuid.NewString()
	t.Cleanup(func() { deleteKeys(t, rdb, "{"+base+"*") })
	fill := func(t *testing.T, prefix string, shards int) *redisstore.Store {
		t.Helper()
		s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix, Shards: shards})
		if err != nil {
			t.Fatal(err)
		}
		for _, owner := range []string{"ann", "bob", "cid", "dee"} { // owners' keys in several shards
			if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: owner, Kind: imagegen.LedgerGrant, Amount: 5, Ref: "grant:g"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CheckLayout(ctx); err != nil { // a key under "{P}"
			t.Fatal(err)
		}
		return s
	}
	for _, shards := range []int{0, 2, 3} {
		for _, otherShards := range []int{0, 2} {
			deleteKeys(t, rdb, "{"+base+"*")
			for _, suffix := range []string{":x", "x", ":1x", "::"} {
				fill(t, base+suffix, otherShards)
			}
			others := redistest.Keys(t, rdb, "{"+base+"*")
			mine := fill(t, base, shards)
			var own, got []string
			for _, k := range redistest.Keys(t, rdb, "{"+base+"*") {
				if !slices.Contains(others, k) {
					own = append(own, k)
				}
			}
			for _, k := range redistest.Keys(t, rdb, mine.KeyPattern()) {
				if mine.OwnsKey(k) {
					got = append(got, k)
				}
			}
			slices.Sort(own)
			slices.Sort(got)
			if !slices.Equal(got, own) {
				t.Errorf("shards %d beside stores of %d: KeyPattern %q and OwnsKey take %q; want the store's keys %q",
					shards, otherShards, mine.KeyPattern(), got, own)
			}
		}
	}
}
