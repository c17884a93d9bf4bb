package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// The same Idempotency-Key sent many times at once makes one task and
// charges once; the others replay it or are told it is in progress.
func TestConcurrentIdempotentSubmitsMakeOneTask(t *testing.T) {
	e := newEnv(t)
	const n = 32
	var wg sync.WaitGroup
	codes := make([]int, n)
	ids := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := e.do("POST", "/api/v1/generate", e.key, t2i, "Idempotency-Key", "same")
			codes[i] = w.Code
			var sub wire.Submitted
			_ = json.Unmarshal(w.Body.Bytes(), &sub)
			ids[i] = sub.TaskID
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		switch codes[i] {
		case http.StatusCreated:
			seen[ids[i]] = true
		case http.StatusConflict:
		default:
			t.Errorf("request %d: status %d", i, codes[i])
		}
	}
	if len(seen) != 1 {
		t.Errorf("tasks made: %v", seen)
	}
	bal, _ := e.svc.Balance(context.Background(), "alice")
	if bal != 8 { // the scripted model costs 2
		t.Errorf("balance %d, want 8", bal)
	}
}

// Cancels racing the worker's completions: every task ends, and the
// owner is charged for the successes and for the tasks its cancel found
// running (their charge kept: failed, cancelled, not refunded) only.
func TestCancelsRacingCompletionsChargeOnlySuccesses(t *testing.T) {
	e := newEnv(t)
	key := e.user("carol", 1000)
	const n = 100
	ids := make([]string, n)
	for i := range n {
		w := e.submit(key, t2i)
		if w.Code != http.StatusCreated {
			t.Fatalf("submit: %d %s", w.Code, w.Body)
		}
		var sub wire.Submitted
		_ = json.Unmarshal(w.Body.Bytes(), &sub)
		ids[i] = sub.TaskID
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range n {
			_, _ = e.svc.RunOnce(context.Background())
		}
	}()
	go func() {
		defer wg.Done()
		for _, id := range ids {
			e.do("POST", "/api/v1/tasks/"+id+"/cancel", key, "")
		}
	}()
	wg.Wait()
	for {
		ran, _ := e.svc.RunOnce(context.Background())
		if !ran {
			break
		}
	}
	succeeded, kept := 0, 0
	for _, id := range ids {
		task, err := e.svc.Task(context.Background(), "carol", id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case task.Status == imagegen.StatusSuccess:
			succeeded++
		case task.Status == imagegen.StatusFailed && !task.Refunded:
			if task.ErrorCode != imagegen.CodeCancelled {
				t.Errorf("task %s failed with %q and was not refunded", id, task.ErrorCode)
			}
			kept++
		case task.Status == imagegen.StatusFailed:
		default:
			t.Errorf("task %s stuck %s", id, task.Status)
		}
	}
	bal, _ := e.svc.Balance(context.Background(), "carol")
	if want := int64(1000 - 2*(succeeded+kept)); bal != want {
		t.Errorf("balance %d, want %d (%d succeeded, %d cancelled while running)", bal, want, succeeded, kept)
	}
}
