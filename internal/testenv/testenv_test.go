package testenv_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imagegen/imagegen/internal/testenv"
)

// Eventually returns once the condition holds.
func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	var polls atomic.Int32
	testenv.Eventually(t, time.Minute, "the third poll", func() bool { return polls.Add(1) >= 3 })
	if n := polls.Load(); n != 3 {
		t.Fatalf("polled %d times, want 3", n)
	}
}

// recorder is a testing.TB that keeps a Fatalf instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// Eventually fails the test when the condition does not hold in time.
func TestEventuallyFailsWhenTheTimeIsUp(t *testing.T) {
	r := &recorder{TB: t}
	done := false
	testenv.Eventually(r, 5*time.Millisecond, "nothing", func() bool {
		if r.failed != "" { // Fatalf returned: stop the loop as a real test would
			done = true
		}
		return done
	})
	if r.failed == "" {
		t.Fatal("Eventually did not fail on a condition that never holds")
	}
}

// EventuallyNoError returns once the condition gives no error, and
// fails with the last error it gave when it never stops giving one.
func TestEventuallyNoErrorSaysWhatItSawLast(t *testing.T) {
	var polls atomic.Int32
	testenv.EventuallyNoError(t, time.Minute, "the third poll", func() error {
		if n := polls.Add(1); n < 3 {
			return fmt.Errorf("poll %d", n)
		}
		return nil
	})
	if n := polls.Load(); n != 3 {
		t.Fatalf("polled %d times, want 3", n)
	}
	r := &recorder{TB: t}
	testenv.EventuallyNoError(r, 5*time.Millisecond, "nothing", func() error { return errors.New("status queued") })
	if !strings.Contains(r.failed, "status queued") {
		t.Fatalf("the failure says %q, not the last error", r.failed)
	}
}

// ProcessCPU reads this process's CPU time, which spinning makes grow
// (by a 10 ms tick at a time), and fails for a process that is not.
func TestProcessCPUGrowsWithWork(t *testing.T) {
	before, err := testenv.ProcessCPU(os.Getpid())
	if err != nil {
		t.Skipf("/proc is not readable here: %v", err)
	}
	after := before
	for end := time.Now().Add(10 * time.Second); after == before && time.Now().Before(end); {
		if after, err = testenv.ProcessCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if after <= before {
		t.Fatalf("CPU time still %v after 10 s of spinning", after)
	}
	if _, err := testenv.ProcessCPU(-1); err == nil {
		t.Fatal("ProcessCPU(-1) did not fail")
	}
}
