package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU is the CPU time process pid has used so far: its utime +
// stime from /proc/PID/stat, in clock ticks of 10 ms (USER_HZ). The
// benchmarks that count a database server's work read it around their
// timed part.
func ProcessCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name (which may hold spaces), from
	// field 3: utime and stime are fields 14 and 15.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / 100, nil
}
