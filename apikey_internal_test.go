package imagegen

import (
	"hash/crc32"
	"testing"
)

// keyChecksum is the CRC-32 (IEEE) of the key's random part in base62,
// as keys made by earlier versions carry it: they stay valid.
func TestKeyChecksumIsCRC32(t *testing.T) {
	for _, random := range []string{"", "a", "0123456789ABCDEFGHIJKLMNOPQRSTUV", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "x\x00\xff"} {
		sum := crc32.ChecksumIEEE([]byte(random))
		var want [keyChecksumChars]byte
		for i := keyChecksumChars - 1; i >= 0; i-- {
			want[i] = base62[sum%62]
			sum /= 62
		}
		if got := keyChecksum(random); got != want {
			t.Errorf("keyChecksum(%q) = %q, want %q", random, got[:], want[:])
		}
	}
}

// A generated key's format is checked, on every request, without an
// allocation.
func TestCheckAPIKeyFormatAllocations(t *testing.T) {
	key := NewAPIKey()
	if n := testing.AllocsPerRun(100, func() {
		if err := CheckAPIKeyFormat(key); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per check", n)
	}
}
