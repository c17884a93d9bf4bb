package ratelimit_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/ratelimit"
	"github.com/matryer/is"
)

func newIPLimiter(t *testing.T, cfg ratelimit.IPLimiterConfig) (*ratelimit.IPLimiter, *imagegentest.Clock) {
	t.Helper()
	clock := imagegentest.NewClock(time.Time{})
	cfg.Clock = clock
	l, err := ratelimit.NewIPLimiter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l, clock
}

func TestIPLimiterBlocksAfterBurst(t *testing.T) {
	is := is.New(t)
	l, clock := newIPLimiter(t, ratelimit.IPLimiterConfig{}) // 1/s, burst 10
	const ip = "192.0.2.7:5555"
	for range 10 {
		_, blocked := l.Blocked(ip)
		is.True(!blocked) // within the burst
		l.Failure(ip)
	}
	wait, blocked := l.Blocked(ip)
	is.True(blocked)
	is.Equal(wait, time.Second) // one token refills per second

	clock.Advance(time.Second - time.Millisecond)
	wait, blocked = l.Blocked(ip)
	is.True(blocked)
	is.Equal(wait, time.Millisecond)

	clock.Advance(time.Millisecond)
	_, blocked = l.Blocked(ip)
	is.True(!blocked) // one more attempt allowed
	l.Failure(ip)
	wait, blocked = l.Blocked(ip)
	is.True(blocked)
	is.Equal(wait, time.Second)
}

func TestIPLimiterUnknownClientNotBlocked(t *testing.T) {
	is := is.New(t)
	l, _ := newIPLimiter(t, ratelimit.IPLimiterConfig{})
	wait, blocked := l.Blocked("198.51.100.1")
	is.True(!blocked)
	is.Equal(wait, time.Duration(0))
	is.Equal(l.Len(), 0) // Blocked records nothing
}

func TestIPLimiterClientsAreIndependent(t *testing.T) {
	is := is.New(t)
	l, _ := newIPLimiter(t, ratelimit.IPLimiterConfig{Burst: 2})
	l.Failure("192.0.2.1")
	l.Failure("192.0.2.1")
	_, blocked := l.Blocked("192.0.2.1:9")
	is.True(blocked)
	_, blocked = l.Blocked("192.0.2.2")
	is.True(!blocked) // another address
	_, blocked = l.Blocked("[2001:db8::1]:9")
	is.True(!blocked) // an IPv6 client
}

func TestIPLimiterGroupsIPv6By64(t *testing.T) {
	is := is.New(t)
	l, _ := newIPLimiter(t, ratelimit.IPLimiterConfig{Burst: 3})
	l.Failure("2001:db8:aa:bb::1")
	l.Failure("[2001:db8:aa:bb::2]:1234")
	l.Failure("2001:db8:aa:bb:ffff::3")
	_, blocked := l.Blocked("2001:db8:aa:bb::4")
	is.True(blocked) // the whole /64 shares one allowance
	_, blocked = l.Blocked("2001:db8:aa:bc::1")
	is.True(!blocked) // the next /64 is another client
	is.Equal(l.Len(), 1)
}

func TestIPLimiterConcurrentFailuresDeepenTheBlock(t *testing.T) {
	is := is.New(t)
	l, clock := newIPLimiter(t, ratelimit.IPLimiterConfig{Rate: 2, Burst: 5})
	const ip = "203.0.113.9"
	var wg sync.WaitGroup
	for range 15 { // 15 guesses in flight at once all fail
		wg.Go(func() { l.Failure(ip) })
	}
	wg.Wait()
	wait, blocked := l.Blocked(ip)
	is.True(blocked)
	is.Equal(wait, 5500*time.Millisecond) // 10 owed plus 1 needed, at 2/s
	clock.Advance(wait)
	_, blocked = l.Blocked(ip)
	is.True(!blocked)
}

func TestIPLimiterRetryAfterIsEnough(t *testing.T) {
	for _, r := range []rate.Limit{0.1, 1.0 / 3, 0.7, 1, 3, 7, 1000} {
		t.Run(fmt.Sprint(r), func(t *testing.T) {
			is := is.New(t)
			l, clock := newIPLimiter(t, ratelimit.IPLimiterConfig{Rate: r, Burst: 1})
			for range 4 {
				clock.Advance(123456789 * time.Nanosecond)
				if wait, blocked := l.Blocked("192.0.2.1"); blocked {
					is.True(wait > 0)
					clock.Advance(wait - 1)
					_, blocked = l.Blocked("192.0.2.1")
					is.True(blocked) // a nanosecond less is not enough
					clock.Advance(1)
					_, blocked = l.Blocked("192.0.2.1")
					is.True(!blocked) // waiting RetryAfter is enough
				}
				l.Failure("192.0.2.1")
			}
		})
	}
}

func TestIPLimiterEvictsRefilledClients(t *testing.T) {
	is := is.New(t)
	l, clock := newIPLimiter(t, ratelimit.IPLimiterConfig{})
	peak := 0
	for i := range 50_000 { // a stream of one-off failing clients
		l.Failure(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
		clock.Advance(10 * time.Millisecond) // a bucket refills in 10s: ~1000 live
		peak = max(peak, l.Len())
	}
	t.Logf("peak %d clients tracked", peak)
	is.True(peak <= 2*1000+64*32) // bounded by live clients, not by total
}

func TestIPLimiterMaxClients(t *testing.T) {
	is := is.New(t)
	const maxClients = 200
	l, _ := newIPLimiter(t, ratelimit.IPLimiterConfig{MaxClients: maxClients, Burst: 1})
	for i := range 10 * maxClients {
		l.Failure(fmt.Sprintf("10.0.%d.%d", i>>8&255, i&255))
		is.True(l.Len() <= maxClients) // hard cap holds
	}
}

func TestIPConfigValidation(t *testing.T) {
	for _, tt := range []struct {
		cfg   ratelimit.IPLimiterConfig
		field string
	}{
		{ratelimit.IPLimiterConfig{Rate: -1}, "IPLimiterConfig.Rate"},
		{ratelimit.IPLimiterConfig{Rate: rate.Inf}, "IPLimiterConfig.Rate"},
		{ratelimit.IPLimiterConfig{Burst: -1}, "IPLimiterConfig.Burst"},
		{ratelimit.IPLimiterConfig{MaxClients: -1}, "IPLimiterConfig.MaxClients"},
	} {
		t.Run(tt.field, func(t *testing.T) {
			is := is.New(t)
			l, err := ratelimit.NewIPLimiter(tt.cfg)
			is.True(err != nil)
			is.True(l == nil)
			is.True(strings.Contains(err.Error(), tt.field)) // error names the field
		})
	}
}

func TestIPLimiterBlockedDoesNotAllocate(t *testing.T) {
	is := is.New(t)
	l, _ := newIPLimiter(t, ratelimit.IPLimiterConfig{Burst: 1})
	l.Failure("192.0.2.1")
	allocs := testing.AllocsPerRun(100, func() {
		l.Blocked("192.0.2.1:1")     // known and blocked
		l.Blocked("192.0.2.2:1")     // unknown
		l.Blocked("[2001:db8::1]:1") // unknown IPv6
	})
	is.Equal(allocs, 0.0)
}
