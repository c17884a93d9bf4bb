package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/imagegen/imagegen"
)

// Another user's task is invisible and untouchable from the console, and
// odd input on every console route answers below 500.
func TestOtherUsersTasksAndOddInput(t *testing.T) {
	f := newFixture(t, fixtureConfig{rateLimit: 100000})
	aliceKey := f.user(t, "alice", 100)
	f.user(t, "bob", 100)
	bobTask := f.submit(t, "bob", "bob's secret prompt")
	b := f.browser(t)
	b.signIn(aliceKey)
	for _, p := range []string{"/console/tasks/" + bobTask, "/console/api/tasks/" + bobTask, "/console/api/tasks/" + bobTask + "?wait=1"} {
		pg := b.get(p)
		if pg.status != http.StatusNotFound || strings.Contains(pg.body, "secret") {
			t.Errorf("%s: %d %q", p, pg.status, pg.body[:min(200, len(pg.body))])
		}
	}
	pg := b.submitForm("/console/tasks", "/console/tasks/"+bobTask+"/cancel", nil)
	if pg.status != http.StatusNotFound {
		t.Errorf("cancel bob's task: %d", pg.status)
	}
	task, err := f.svc.Task(context.Background(), "bob", bobTask)
	if err != nil || task.ErrorCode == imagegen.CodeCancelled {
		t.Errorf("bob's task after alice's cancel: %+v %v", task, err)
	}
	odd := []string{"%00", "%ff", "a%2Fb", "..", strings.Repeat("a", 3000), "%C0%AE", bobTask + "%00", strings.ToUpper(bobTask)}
	queries := []string{"", "?cursor=%00", "?cursor=-1", "?cursor=" + strings.Repeat("9", 400), "?status=%ff", "?wait=-1", "?wait=99999999999999999999999", "?done=%00", "?owner=%00", "?%zz"}
	n := 0
	for _, s := range odd {
		for _, q := range queries {
			n++ // a user of its own: the session read budget is per user
			owner := "u" + strings.Repeat("x", n)
			b := f.browser(t)
			b.signIn(f.user(t, owner, 10))
			for _, p := range []string{"/console/tasks/" + s + q, "/console/api/tasks/" + s + q, "/console/tasks" + q, "/console/credits" + q, "/console/keys" + q, "/console/playground" + q, "/console/ops" + q, "/console/static/" + s} {
				if pg := b.get(p); pg.status >= 500 || pg.status == http.StatusTooManyRequests {
					t.Errorf("GET %s: %d", p, pg.status)
				}
			}
			for _, p := range []string{"/console/tasks/" + s + "/cancel", "/console/keys/" + s + "/revoke"} {
				if pg := b.submitForm("/console/keys", p, nil); pg.status >= 500 {
					t.Errorf("POST %s: %d", p, pg.status)
				}
			}
		}
	}
	forms := []url.Values{
		{"scene": {"image-to-image"}, "prompt": {"x"}, "image_input": {"http://127.0.0.1/\nhttp://[::1]/"}},
		{"scene": {"text-to-image"}, "prompt": {"x\x00"}},
		{"scene": {"text-to-image"}, "prompt": {"\xff"}},
		{"scene": {"text-to-image"}, "prompt": {"x"}, "aspect_ratio": {"\xff"}},
		{"scene": {"text-to-image", "image-to-image"}, "prompt": {"x"}, "once": {"00000000-0000-0000-0000-000000000000"}},
		{"scene": {"text-to-image"}, "prompt": {"y"}, "once": {"00000000-0000-0000-0000-000000000000"}},
		{"scene": {"text-to-image"}, "prompt": {"y"}, "once": {"{00000000-0000-0000-0000-000000000000}"}},
		{"scene": {"text-to-image"}, "prompt": {"y"}, "once": {"urn:uuid:00000000-0000-0000-0000-000000000000"}},
	}
	for _, form := range forms {
		if pg := b.submitForm("/console/playground", "/console/playground", form); pg.status >= 500 {
			t.Errorf("playground %v: %d", form, pg.status)
		}
	}
	for _, name := range []string{"\xff", "a\x00", strings.Repeat("é", 101), "\u2028"} {
		if pg := b.submitForm("/console/keys", "/console/keys", url.Values{"name": {name}}); pg.status >= 500 {
			t.Errorf("key name %q: %d", name, pg.status)
		}
	}
}
