package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/ratelimit/postgres"
)

// Every string is a key, as for the in-process and Redis limiters: one
// that PostgreSQL's text refuses (NUL, invalid UTF-8) or that is too long
// for the table's index is counted like any other, on its own, rather
// than failing the call (an error the API answers with 500, for a key
// that a host's Authenticator took from its caller). Keys that differ
// count apart, a long one from one that shares its start, and an odd one
// from a plain key spelt like its stored form.
func TestAnyKeyIsCounted(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	schema := pgtest.MigratedSchema(t, pool)
	lim := newPostgres(t, pool, postgres.Config{Limit: 1, Window: time.Hour, Schema: schema})
	rnd := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < 6000 {
		b.WriteRune(rune(0x4e00 + rnd.IntN(0x5000))) // CJK: valid UTF-8 that barely compresses
	}
	long := b.String()
	sum := sha256.Sum256([]byte("a\x00b"))
	keys := []string{
		"", "a\x00b", "a\x00c", "\x00", "\xff", "\xfe", "a\xc3", // NUL, invalid UTF-8
		long, long + "x", strings.Repeat("k", 1<<20), strings.Repeat("k", 1<<20) + "x", // past the index's limit
		"sha256:" + hex.EncodeToString(sum[:]), // a plain key spelt like a digest
	}
	for _, key := range keys {
		res, err := lim.Allow(ctx, key)
		is.NoErr(err)
		is.True(res.Allowed) // the first request of every key
	}
	for _, key := range keys {
		res, err := lim.Allow(ctx, key)
		is.NoErr(err)
		is.True(!res.Allowed) // each counted its own
		is.True(res.RetryAfter > 0)
	}
}

// A prefix that no key could be stored under (NUL, invalid UTF-8, or so
// long that the table's index could not hold it) is refused by New,
// rather than failing every Allow.
func TestNewRefusesAnUnstorablePrefix(t *testing.T) {
	is := is.New(t)
	pool := pgtest.Connect(t)
	for _, prefix := range []string{"rl\x00", "rl\xff:", strings.Repeat("p", postgres.MaxPrefix+1)} {
		_, err := postgres.New(pool, postgres.Config{Prefix: prefix})
		is.True(err != nil)
	}
	lim, err := postgres.New(pool, postgres.Config{Prefix: strings.Repeat("p", postgres.MaxPrefix)})
	is.NoErr(err)
	lim.Close()
}

// A Limit past PostgreSQL's integer (rate_allow's p_limit) is refused by
// New, rather than failing every Allow.
func TestNewRefusesALimitPastInteger(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	pool := pgtest.Connect(t)
	schema := pgtest.MigratedSchema(t, pool)
	_, err := postgres.New(pool, postgres.Config{Limit: math.MaxInt32 + 1, Schema: schema})
	is.True(err != nil)
	lim := newPostgres(t, pool, postgres.Config{Limit: math.MaxInt32, Schema: schema})
	res, err := lim.Allow(ctx, "k")
	is.NoErr(err)
	is.True(res.Allowed)
}
