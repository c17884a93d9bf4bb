package console_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
)

// A status filter reads a bounded stretch of the user's tasks a page
// (storekit.ListScan: 420 for the console's 20 a page), so a page may
// hold no match and still have older ones behind it. The task list
// then links to the older page, where it said "No tasks yet" and left
// the user's older tasks of that status out of reach.
func TestFilteredTaskListLinksPastAStretchWithoutMatches(t *testing.T) {
	byPrompt := func(_ context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		if g.Request.Prompt == "keep" {
			return imagegentest.Succeed()(context.Background(), g)
		}
		return nil, &imagegen.ModelError{Provider: "scripted", Err: errors.New("refused")}
	}
	f := newFixture(t, fixtureConfig{model: imagegentest.NewModel(1, slices.Repeat([]imagegentest.Step{byPrompt}, 500)...)})
	b := f.browser(t)
	b.signIn(f.user(t, "alice", 1000)) // the failures are refunded, but may be charged all at once first
	kept := f.submit(t, "alice", "keep")
	ended := func(id string, want imagegen.Status) func() bool {
		return func() bool {
			task, err := f.svc.Task(context.Background(), "alice", id)
			return err == nil && task.Status == want
		}
	}
	testenv.Eventually(t, 10*time.Second, "the first task to succeed", ended(kept, imagegen.StatusSuccess))
	var failed []string
	for range 430 { // newer, and more than one stretch
		failed = append(failed, f.submit(t, "alice", "fail"))
	}
	testenv.Eventually(t, 30*time.Second, "the newer tasks to fail", func() bool {
		return !slices.ContainsFunc(failed, func(id string) bool { return !ended(id, imagegen.StatusFailed)() })
	})

	first := b.get("/console/tasks?status=success")
	if strings.Contains(first.body, "No tasks yet") || strings.Contains(first.body, kept) {
		t.Fatalf("the first page of successes: %q; want none of them and a link past the failures", first.body)
	}
	next := regexp.MustCompile(`href="(/console/tasks\?cursor=[^"]+)" id="next"`).FindStringSubmatch(first.body)
	if next == nil {
		t.Fatalf("no link to the older page in %q", first.body)
	}
	second := b.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	contains(t, second, kept)
}
