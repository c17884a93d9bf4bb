package redis

import "testing"

// keySlot agrees with Redis's CLUSTER KEYSLOT (values from the Redis
// Cluster specification's examples and redis-cli).
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]uint16{"123456789": 0x31C3 % clusterSlots, "foo": 12182, "bar": 5061, "": 0} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
}

// The default 16 shards spread evenly over three masters with even slot
// ranges: 6, 5 and 5.
func TestShardTagsSpreadOverMasters(t *testing.T) {
	perMaster := make([]int, 3)
	seen := map[uint16]bool{}
	for i := range DefaultClusterShards {
		tag := shardTag("imagegen", i, DefaultClusterShards)
		slot := keySlot(tag[1 : len(tag)-1])
		if seen[slot] {
			t.Fatalf("two shards in slot %d", slot)
		}
		seen[slot] = true
		perMaster[int(slot)*3/clusterSlots]++
	}
	for m, n := range perMaster {
		if n < 5 || n > 6 {
			t.Errorf("master %d holds %d of 16 shards: %v", m, n, perMaster)
		}
	}
	if got := shardTag("imagegen", 0, 1); got != "{imagegen}" {
		t.Errorf("one shard is tagged %q, want the single-node layout's {imagegen}", got)
	}
}
