package redistest

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// CallgrindVar names the PID of a redis-server run under valgrind
// --tool=callgrind, for benchmarks that count the server's instructions;
// or it is CallgrindOwnServers.
const CallgrindVar = "IMAGEGEN_BENCH_CALLGRIND"

// CallgrindOwnServers as CallgrindVar says that the redis-server on PATH
// runs the server under callgrind (a wrapper script: exec valgrind
// --tool=callgrind … redis-server "$@"), for benchmarks that start
// servers of their own (CallgrindOwn).
const CallgrindOwnServers = "own"

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
	if pid == "" || pid == CallgrindOwnServers {
		return func() {}
	}
	return callgrindAround(tb, pid)
}

// CallgrindOwn is Callgrind for a server the benchmark started itself,
// pid, when CallgrindVar is CallgrindOwnServers (a server is killed
// when its test ends, which leaves callgrind no time to write its
// counts: only the dumps are there).
func CallgrindOwn(tb testing.TB, pid int) (dump func()) {
	tb.Helper()
	if os.Getenv(CallgrindVar) != CallgrindOwnServers {
		return func() {}
	}
	return callgrindAround(tb, strconv.Itoa(pid))
}

// callgrindAround zeroes pid's counts and returns the func that dumps
// them.
func callgrindAround(tb testing.TB, pid string) (dump func()) {
	tb.Helper()
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
