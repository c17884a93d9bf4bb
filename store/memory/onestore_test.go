package memory

import (
	"context"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// ownerStore is a store on a test clock whose owner "a" holds credits,
// and submit, which queues a's task id of model m (cost 1).
func ownerStore(t *testing.T, credits int64) (s *Store, clock *imagegentest.Clock, submit func(id string)) {
	t.Helper()
	ctx := context.Background()
	clock = imagegentest.NewClock(time.Time{})
	s, err := New(Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "a", Kind: imagegen.LedgerGrant, Amount: credits, Ref: "g"}); err != nil {
		t.Fatal(err)
	}
	submit = func(id string) {
		t.Helper()
		task := &imagegen.Task{ID: id, Owner: "a", Cost: 1, Model: "m", Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}}
		if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
	}
	return s, clock, submit
}
