package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
)

// Through PgBouncer in transaction mode (-postgres) with a direct URL for
// LISTEN and migrations (-postgres-listen): 60 submits all succeed, and a
// Prefer: wait long-poll answers within 2 s of its task's end in another
// process (it would wait its whole minute if the finish's NOTIFY were
// lost in the pooler).
func TestServeThroughPgBouncer(t *testing.T) {
	is := is.New(t)
	pooler := pgtest.PgBouncer(t)
	env := newPGEnv(t)
	var out bytes.Buffer
	is.NoErr(run(ctx, []string{"migrate", "-postgres", pooler, "-postgres-listen", env.url, "-schema", env.schema}, noEnv, &out, &out))
	is.True(strings.Contains(out.String(), "nothing to do")) // newPGEnv migrated it; the check ran on the direct URL

	args := []string{"-postgres", pooler, "-postgres-listen", env.url, "-schema", env.schema}
	key := "pgbouncer-key-0123456789"
	_, base := startServeProcess(t, append(args, "-demo-key", key, "-demo-credits", "100", "-rate-limit", "1000", "-workers", "0")...)

	const submits = 60
	ids := make(chan string, submits)
	var wg sync.WaitGroup
	for i := range submits {
		wg.Go(func() {
			code, sub := httpCall(t, "POST", base+"/api/v1/generate", key, fmt.Sprintf(`{"scene":"text-to-image","prompt":"lighthouse %d"}`, i))
			if code != http.StatusCreated {
				t.Errorf("submit %d: %d %v", i, code, sub)
				return
			}
			ids <- sub["task_id"].(string)
		})
	}
	wg.Wait()
	close(ids)
	is.Equal(len(ids), submits)

	// The last task queued: long-polled before any worker runs, finished
	// by a worker process started after the poll.
	code, sub := httpCall(t, "POST", base+"/api/v1/generate", key, `{"scene":"text-to-image","prompt":"the last one"}`)
	is.Equal(code, http.StatusCreated)
	last := sub["task_id"].(string)
	type answer struct {
		code int
		task map[string]any
		at   time.Time
	}
	polled := make(chan answer, 1)
	pollStart := time.Now()
	go func() {
		code, task := longPoll(t, base+"/api/v1/tasks/"+last+"?view=full", key) // full: with finished_at
		polled <- answer{code, task, time.Now()}
	}()
	w := startImagegen(t, append([]string{"worker", "-placeholder-delay", "200ms", "-workers", "8"}, args...)...)
	var a answer
	select {
	case a = <-polled:
	case <-time.After(90 * time.Second):
		t.Fatalf("the long-poll did not answer:\n%s", w.Output())
	}
	is.Equal(a.code, http.StatusOK)
	is.Equal(a.task["status"], "success")
	finished, err := time.Parse(time.RFC3339Nano, a.task["finished_at"].(string))
	is.NoErr(err)
	is.True(finished.After(pollStart)) // the poll was waiting when the task ended
	if late := a.at.Sub(finished); late > 2*time.Second {
		t.Fatalf("the long-poll answered %v after its task ended (want at most 2s)", late)
	}
	for id := range ids {
		code, task := longPoll(t, base+"/api/v1/tasks/"+id, key)
		is.Equal(code, http.StatusOK)
		is.Equal(task["status"], "success")
	}
	w.stop(t)
}
