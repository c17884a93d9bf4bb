package redis

import (
	"context"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
)

// Provider statistics live in one hash per minute, P:pstats:<minute>
// (Unix time / 60), whose fields are "r\x00<provider>\x00<outcome>" and
// "f\x00<from>\x00<to>" and values the counts; each hash expires
// ProviderStatsRetention after its minute ends.

func (k keys) providerStats(minute int64) string {
	return k.tag + ":pstats:" + strconv.FormatInt(minute, 10)
}

const bucketSeconds = int64(imagegen.ProviderStatsBucket / time.Second)

// storeTime is the store's time: the injected clock's, or the server's
// (one round trip).
func (s *Store) storeTime(ctx context.Context) (time.Time, error) {
	if s.clock != nil {
		return s.clock.Now(), nil
	}
	return s.rdb.Time(ctx).Result()
}

// AddProviderStats adds st to the current minute's hash in one
// MULTI/EXEC of HINCRBYs, after reading the server's time.
func (s *Store) AddProviderStats(ctx context.Context, st imagegen.ProviderStats) error {
	if st.Empty() {
		return nil
	}
	now, err := s.storeTime(ctx)
	if err != nil {
		return wrapErr("add provider stats", err)
	}
	minute := now.Unix() / bucketSeconds
	key := s.k.providerStats(minute)
	_, err = s.rdb.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
		for _, r := range st.Requests {
			pipe.HIncrBy(ctx, key, statField('r', r.Provider, r.Outcome), r.N)
		}
		for _, f := range st.Fallbacks {
			pipe.HIncrBy(ctx, key, statField('f', f.From, f.To), f.N)
		}
		// The hash lives until its minute is ProviderStatsRetention old
		// (a relative TTL: the injected clock of tests is not the server's).
		end := time.Unix((minute+1)*bucketSeconds, 0).Add(imagegen.ProviderStatsRetention)
		pipe.PExpire(ctx, key, end.Sub(now))
		return nil
	})
	return wrapErr("add provider stats", err)
}

func statField(kind byte, a, b string) string {
	return string(kind) + "\x00" + a + "\x00" + b
}

// ProviderStats sums the hashes of the minutes of the last window, read
// in one pipeline (after reading the server's time).
func (s *Store) ProviderStats(ctx context.Context, window time.Duration) (imagegen.ProviderStats, error) {
	now, err := s.storeTime(ctx)
	if err != nil {
		return imagegen.ProviderStats{}, wrapErr("provider stats", err)
	}
	from := now.Add(-min(max(window, 0), imagegen.ProviderStatsRetention)).Unix() / bucketSeconds
	to := now.Unix() / bucketSeconds
	pipe := s.rdb.Pipeline()
	cmds := make([]*goredis.MapStringStringCmd, 0, to-from+1)
	for m := from; m <= to; m++ {
		cmds = append(cmds, pipe.HGetAll(ctx, s.k.providerStats(m)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return imagegen.ProviderStats{}, wrapErr("provider stats", err)
	}
	var st imagegen.ProviderStats
	for _, c := range cmds {
		for field, v := range c.Val() {
			kind, rest, _ := strings.Cut(field, "\x00")
			a, b, _ := strings.Cut(rest, "\x00")
			n := atoi(v)
			switch kind {
			case "r":
				st.Requests = append(st.Requests, imagegen.ProviderCount{Provider: a, Outcome: b, N: n})
			case "f":
				st.Fallbacks = append(st.Fallbacks, imagegen.FallbackCount{From: a, To: b, N: n})
			}
		}
	}
	return imagegen.SumProviderStats(st), nil
}
