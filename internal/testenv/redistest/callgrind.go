package redistest

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// CallgrindVar names the PID of a redis-server run under valgrind
// --tool=callgrind, for benchmarks that count the server's instructions.
const CallgrindVar = "IMAGEGEN_BENCH_CALLGRIND"

// Callgrind zeroes the instruction counts of the server CallgrindVar
// names (callgrind_control -z) and returns the func that dumps them
// (callgrind_control --dump, described by the benchmark's name and b.N):
// called around a benchmark's timed part, the dump is the server's
// instructions over that part alone, which the machine's load does not
// move. A benchmark runs more than once (b.N = 1 first), each run with
// its own dump: the last one is the run -benchtime asked for. Both do
// nothing when the variable is not set.
func Callgrind(tb testing.TB) (dump func()) {
	tb.Helper()
	pid := os.Getenv(CallgrindVar)
	if pid == "" {
		return func() {}
	}
	callgrindControl(tb, "-z", pid)
	desc := tb.Name()
	if b, ok := tb.(*testing.B); ok {
		desc += " N=" + strconv.Itoa(b.N)
	}
	return func() { callgrindControl(tb, "--dump="+desc, pid) }
}

// callgrindControl runs callgrind_control with arg on pid.
func callgrindControl(tb testing.TB, arg, pid string) {
	tb.Helper()
	if out, err := exec.Command("callgrind_control", arg, pid).CombinedOutput(); err != nil {
		tb.Fatalf("callgrind_control %s %s: %v\n%s", arg, pid, err, out)
	}
}
