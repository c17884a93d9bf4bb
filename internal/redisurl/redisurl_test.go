package redisurl_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/internal/redisurl"
)

func TestParseKinds(t *testing.T) {
	is := is.New(t)

	o, err := redisurl.Parse("redis://:pw@127.0.0.1:6379/3")
	is.NoErr(err)
	is.Equal(o.Kind, redisurl.Single)
	is.Equal(o.Single.Addr, "127.0.0.1:6379")
	is.Equal(o.Single.DB, 3)
	is.Equal(o.Single.Password, "pw")
	is.Equal(o.String(), "127.0.0.1:6379 db 3")

	o, err = redisurl.Parse("rediss+cluster://u:pw@10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000&dial_timeout=2s")
	is.NoErr(err)
	is.Equal(o.Kind, redisurl.Cluster)
	is.Equal(o.Cluster.Addrs, []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"})
	is.Equal(o.Cluster.Username, "u")
	is.Equal(o.Cluster.Password, "pw")
	is.True(o.Cluster.TLSConfig != nil)
	is.Equal(o.String(), "cluster 10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000")

	// The userinfo is the data nodes' (as in redis://); sentinels have
	// their own options.
	o, err = redisurl.Parse("redis+sentinel://:pw@10.0.0.1:26379/2?master=mymaster&addr=10.0.0.2:26379&sentinel_password=spw")
	is.NoErr(err)
	is.Equal(o.Kind, redisurl.Sentinel)
	is.Equal(o.Failover.MasterName, "mymaster")
	is.Equal(o.Failover.SentinelAddrs, []string{"10.0.0.1:26379", "10.0.0.2:26379"})
	is.Equal(o.Failover.DB, 2)
	is.Equal(o.Failover.Password, "pw")
	is.Equal(o.Failover.SentinelPassword, "spw")
	is.True(o.Failover.TLSConfig == nil)
	is.Equal(o.String(), "sentinel master mymaster via 10.0.0.1:26379,10.0.0.2:26379 db 2")

	o, err = redisurl.Parse("rediss+sentinel://10.0.0.1:26379?master_name=m")
	is.NoErr(err)
	is.Equal(o.Failover.MasterName, "m")
	is.True(o.Failover.TLSConfig != nil)
}

// Bad URLs are refused with a message that says what was wrong and never
// repeats a password.
func TestParseErrors(t *testing.T) {
	cases := []struct{ url, want string }{
		{"http://127.0.0.1:6379", "unknown Redis URL scheme"},
		{"redis+mesh://127.0.0.1:6379", "unknown Redis URL scheme"},
		{"redis://:s3cretpw@127.0.0.1:notaport", "not a Redis URL"},
		{"redis://:s3cretpw@127.0.0.1:6379/x", "redis URL"},
		{"redis+sentinel://:s3cretpw@127.0.0.1:26379", "master=NAME"},
		{"redis+cluster://:s3cretpw@127.0.0.1:7000?addr=nope", "redis URL"},
		{"redis+sentinel://127.0.0.1:26379?master=m&sentinel_password=s3cretpw&bogus=1", "redis URL"},
		// A password with '@', '/' or '%' in it, encoded or not: no part
		// of it, before or after the '@', nor a fragment the parser quoted.
		{"redis://:s3cret@t4il@127.0.0.1:notaport", "not a Redis URL"},
		{"redis://:s3cret@t4il@127.0.0.1:6379/x", "redis URL"},
		{"redis://:s3cret%40t4il@127.0.0.1:6379/x", "redis URL"},
		{"redis://:s3cret/t4il@127.0.0.1:6379/0", "not a Redis URL"},
		{"redis://:s3cret%zzt4il@127.0.0.1:6379/0", "not a Redis URL"},
		{"redis://s3cret@t4il@127.0.0.1:6379/x", "redis URL"}, // a password without its ':'
		// The authority ended early at an unencoded '?' or '/' after a
		// part that reads as host:port: the rest of the password shows
		// as an option's name or the path, up to the '@' and on.
		{"redis://u:s3cret@x?t4il@127.0.0.1:6379/0", "redis URL"},
		{"redis://:s3cret:0/t4il@127.0.0.1:6379/0", "redis URL"},
		{"redis://u:s3cret@x?a&t4il@127.0.0.1:6379/0", "redis URL"},
	}
	for _, c := range cases {
		_, err := redisurl.Parse(c.url)
		if err == nil {
			t.Errorf("%s: no error", c.url)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "s3cret") || strings.Contains(msg, "t4il") || strings.Contains(msg, "%zz") {
			t.Errorf("%s: got %q, want %q and no password", c.url, msg, c.want)
		}
	}
}

// A short password is hidden without garbling the rest of the message:
// the usage it quotes stays whole.
func TestParseErrorKeepsTheUsageWhole(t *testing.T) {
	_, err := redisurl.Parse("redis://:p@127.0.0.1:notaport")
	if err == nil || !strings.Contains(err.Error(), redisurl.Usage) {
		t.Errorf("got %v, want the usage %q in it", err, redisurl.Usage)
	}
}
