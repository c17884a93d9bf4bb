package a1111_test

import (
	"testing"
	"time"

	"github.com/imagegen/imagegen/internal/testenv"
)

// An sdapi server runs one job at a time for all its clients: while
// this generation waits behind another client's job (another user's
// task, perhaps), that job's progress is not reported as this task's.
func TestAnotherJobsProgressIsNotReported(t *testing.T) {
	f := newFake(t)
	f.otherJob = true
	f.progress = []float64{0.2, 0.55, 0.9, 0.95}
	f.release = make(chan struct{})
	var log progressLog
	done := generateInBackground(t, f, &log)
	// Let the adapter read the server's progress a few times, then end the job.
	reads := func() int {
		n := 0
		for _, c := range f.Calls() {
			if c.kind == progressCall || c.kind == taskProgressCall {
				n++
			}
		}
		return n
	}
	testenv.Eventually(t, 10*time.Second, "four reads of the server's progress", func() bool { return reads() >= 4 })
	close(f.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := log.values(); len(got) != 0 {
		t.Errorf("reported %v while another client's job ran; want nothing", got)
	}
}
