package redis

import (
	"fmt"
	"strconv"
)

// DefaultClusterShards is the number of shards of a store on a Redis
// Cluster client when Config.Shards is zero: enough for the shards to
// spread evenly over up to a handful of masters (16 shards on 3 masters
// put 6, 5 and 5 on each).
const DefaultClusterShards = 16

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// shardTag is the hash tag of shard i of a store with prefix: with one
// shard, "{prefix}" (the layout of a single-node store, unchanged);
// with more, "{prefix:i.salt}", salt the smallest number that puts the
// tag's slot within a narrow window at the i-th point of the van der
// Corput sequence over the slots (0, 1/2, 1/4, 3/4, 1/8, …). The first n
// shards, for any n, are thus spread evenly over the slot space, and so
// over masters that hold even ranges of slots (as redis-cli --cluster
// create assigns them). A tag depends only on the prefix and i.
func shardTag(prefix string, i, n int) string {
	if n == 1 {
		return "{" + prefix + "}"
	}
	p := 1
	for p < i+1 {
		p *= 2
	}
	window := clusterSlots / (2 * max(p, 16))
	target := int(vanDerCorput(i) * clusterSlots)
	for salt := 0; ; salt++ {
		tag := prefix + ":" + strconv.Itoa(i) + "." + strconv.Itoa(salt)
		if slot := int(keySlot(tag)); slot >= target && slot < target+window {
			return "{" + tag + "}"
		}
	}
}

// vanDerCorput is the i-th number of the base-2 van der Corput sequence
// in [0, 1): i's binary digits mirrored about the point.
func vanDerCorput(i int) float64 {
	v, f := 0.0, 0.5
	for ; i > 0; i >>= 1 {
		if i&1 == 1 {
			v += f
		}
		f /= 2
	}
	return v
}

// keySlot is the Cluster hash slot of a key's hashed part (the whole key
// when it has no tag): CRC-16/XMODEM modulo 16384.
func keySlot(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % clusterSlots
}

// checkShards validates Config.Shards.
func checkShards(n int) error {
	if n < 0 || n > 1024 {
		return fmt.Errorf("redis store: Config.Shards must be 0 to 1024 (got %d)", n)
	}
	return nil
}
