package bench

import (
	"os"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
)

// redisCPU is a probe of the Redis server's CPU time (utime + stime from
// /proc/PID/stat, 10 ms ticks; the PID from INFO server) over a timed
// part, reported per op as rediscpu-µs/op: what the server did, which
// other processes on a shared machine move less than they move
// wall-clock rates. It measures nothing when the server does not run on
// this machine (its /proc entry is not there). Beside it, gocpu-µs/op
// is the benchmark process's own CPU time per op (the client's side:
// on a 2-core machine the two together are what a submit costs).
//
// With IMAGEGEN_BENCH_CALLGRIND set to the PID of a redis-server run
// under valgrind --tool=callgrind, it also zeroes the server's counts
// as the timed part starts and dumps them as it ends
// (callgrind_control -z, -d): the dump is the server's instructions over
// the timed part, which the machine's load does not move.
func redisCPU(b *testing.B, opt *goredis.Options) probe {
	return func() func() {
		dump := redistest.Callgrind(b)
		pid, before, ok := redisServerCPU(b, opt)
		self, _ := processCPU(os.Getpid())
		return func() {
			dump()
			if now, err := processCPU(os.Getpid()); err == nil {
				b.ReportMetric((now-self)*1e6/float64(b.N), "gocpu-µs/op")
			}
			if !ok {
				return
			}
			after, err := processCPU(pid)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric((after-before)*1e6/float64(b.N), "rediscpu-µs/op")
		}
	}
}

// redisServerCPU reads the server's PID and its CPU time so far
// (seconds); ok is false when it is not readable here.
func redisServerCPU(b *testing.B, opt *goredis.Options) (pid int, cpu float64, ok bool) {
	rdb := goredis.NewClient(&goredis.Options{Addr: opt.Addr, Username: opt.Username, Password: opt.Password})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, found := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); found {
			pid, _ = strconv.Atoi(v)
		}
	}
	cpu, err = processCPU(pid)
	return pid, cpu, err == nil
}

// processCPU is a process's CPU time in seconds.
func processCPU(pid int) (float64, error) {
	d, err := testenv.ProcessCPU(pid)
	return d.Seconds(), err
}
