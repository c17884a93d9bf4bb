package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// QueuePositions reads each queue once for a batch of tasks, up to the
// last of them, not once for each task: the full view of a page of 100
// pending tasks (GET /tasks?view=full&limit=100) read, for each, every
// pending task ahead of it, so that a user at the back of a long queue
// made each such request cost the database a hundred reads of the queue
// (0.4-0.7 s for 100 tasks behind 20,000, against 46 ms for one). Here
// 50 tasks at the back of a queue of 600 must cost fewer index rows
// than twice the queue (they cost about 50 x 570 before).
func TestQueuePositionsReadTheQueueOnce(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{})
	const queued, asked = 600, 50
	createTasks(t, s, queued)
	ids := make([]string, queued)
	for i := range ids {
		ids[i] = fmt.Sprintf("t%04d", i)
	}
	pos, err := s.QueuePositions(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	order := slices.Clone(ids)
	slices.SortFunc(order, func(a, b string) int { return pos[slices.Index(ids, b)] - pos[slices.Index(ids, a)] })
	last := order[:asked] // the 50 at the back
	want, err := s.QueuePositions(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range last {
		if got := pos[slices.Index(ids, id)]; want[i] != got {
			t.Fatalf("%s: position %d asked with 49 others, %d asked with every task", id, want[i], got)
		}
	}

	var plan []struct {
		Plan planNode `json:"Plan"`
	}
	var raw string
	if err := pool.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+s.SQLForTest(postgres.QueuePositionsSQL), pgx.QueryExecModeSimpleProtocol, last).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(raw), &plan); err != nil {
		t.Fatal(err)
	}
	if read := plan[0].Plan.queueRows(); read >= 2*queued {
		t.Fatalf("the positions of %d tasks at the back of a queue of %d read %d entries of the queues' indexes, want fewer than %d (the queue once)", asked, queued, read, 2*queued)
	}
}

// planNode is a node of EXPLAIN (ANALYZE, FORMAT JSON).
type planNode struct {
	Index string     `json:"Index Name"`
	Rows  float64    `json:"Actual Rows"`
	Loops float64    `json:"Actual Loops"`
	Plans []planNode `json:"Plans"`
}

// queueRows is how many entries the scans of n and its children read
// from the indexes of the queues (each model's, the parked and the
// delayed tasks'), over all their loops.
func (n planNode) queueRows() int {
	read := 0
	switch n.Index {
	case "tasks_model_fair", "tasks_parked_fair", "tasks_delayed_fair":
		read += int(n.Rows * n.Loops)
	}
	for _, c := range n.Plans {
		read += c.queueRows()
	}
	return read
}
