package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// An operator's mistyped user or task (not valid UTF-8, or holding NUL)
// is a user or task that does not exist, not a server error, on
// PostgreSQL too, which refuses such a string as a statement's argument.
func TestOperatorOddOwnerAndTaskOnPostgres(t *testing.T) {
	store := pgtest.NewStore(t, pgtest.Connect(t), postgres.Config{})
	f := newFixture(t, fixtureConfig{rateLimit: 100000, store: store})
	b := f.browser(t)
	b.signIn(f.user(t, "ops", 10))
	for _, owner := range []string{"%ff", "a%00b"} {
		if pg := b.get("/console/ops?owner=" + owner); pg.status >= 500 {
			t.Errorf("GET /console/ops?owner=%s: %d", owner, pg.status)
		}
		raw, _ := url.QueryUnescape(owner)
		if pg := b.submitForm("/console/ops", "/console/ops/sessions/end", url.Values{"owner": {raw}, "reason": {"typo"}}); pg.status >= 500 {
			t.Errorf("end sessions of %q: %d", raw, pg.status)
		}
	}
	for _, id := range []string{"%ff", "a%00b"} {
		for _, action := range []string{"cancel", "retry"} {
			if pg := b.submitForm("/console/ops", "/console/ops/tasks/"+id+"/"+action, url.Values{"owner": {"bob"}, "reason": {"typo"}}); pg.status != http.StatusNotFound {
				t.Errorf("%s task %s: %d, want 404", action, id, pg.status)
			}
		}
	}
}
