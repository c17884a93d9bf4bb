package a1111_test

import (
	"sync"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/model/a1111"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// An sdapi server runs one job at a time for all its clients: while
// this generation waits behind another client's job (another user's
// task, perhaps), that job's progress is not reported as this task's.
func TestAnotherJobsProgressIsNotReported(t *testing.T) {
	f := newFake(t)
	f.otherJob = true
	f.progress = []float64{0.2, 0.55, 0.9, 0.95}
	f.release = make(chan struct{})
	m, _ := newModel(t, f, a1111.Config{ProgressInterval: 10 * time.Millisecond, Config: provider.Config{Clock: imagegen.SystemClock{}}})
	var mu sync.Mutex
	var got []float64
	done := make(chan error, 1)
	go func() {
		_, err := generate(t.Context(), m, providertest.T2I("a fox", imagegen.Aspect1x1), func(p float64) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, p)
		})
		done <- err
	}()
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
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 0 {
		t.Errorf("reported %v while another client's job ran; want nothing", got)
	}
}
