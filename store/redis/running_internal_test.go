package redis

import (
	"context"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// A processing task without the fields ro and rm (claimed before they
// existed) counts in its owner's and its model's running sets: leaving
// processing takes it out of both, whether the script read the fields
// with its fencing check (a success, a retry) or on its own (a cancel).
func TestLeavingProcessingWithoutRunningFieldsLeavesBothSets(t *testing.T) {
	ctx := context.Background()
	limits := imagegen.Limits{OwnerConcurrency: 5, ModelConcurrency: map[string]int{"m": 5}}
	for _, leave := range []string{"complete", "retry", "cancel"} {
		t.Run(leave, func(t *testing.T) {
			s, rdb := fundedStore(t, 1)
			task := &imagegen.Task{ID: "t1", Owner: "a", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}, Model: "m", Cost: 1}
			if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
				t.Fatal(err)
			}
			claimed, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 1, Limits: limits})
			if err != nil {
				t.Fatal(err)
			}
			sh := s.shards[0]
			if err := rdb.HDel(ctx, sh.task("t1"), "ro", "rm").Err(); err != nil {
				t.Fatal(err)
			}
			sets := []string{sh.tag + ":run:o:a", sh.tag + ":run:m:m"}
			for _, set := range sets {
				if n, _ := rdb.ZCard(ctx, set).Result(); n != 1 {
					t.Fatalf("%s holds %d tasks after the claim, want 1", set, n)
				}
			}
			switch leave {
			case "complete":
				_, err = s.CompleteTaskWithBytes(ctx, "t1", claimed[0].Attempt, []imagegen.Image{{ID: "img-1", Owner: "a", ContentType: "image/png", Size: 1}}, [][]byte{{1}}, nil)
			case "retry":
				err = s.RetryTask(ctx, "t1", claimed[0].Attempt, time.Minute, "again")
			case "cancel":
				_, err = s.CancelTask(ctx, "a", "t1", imagegen.CancelParams{})
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, set := range sets {
				if n, _ := rdb.ZCard(ctx, set).Result(); n != 0 {
					t.Errorf("%s holds %d tasks after the task left processing, want 0", set, n)
				}
			}
		})
	}
}
