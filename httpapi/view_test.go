package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/wire"
)

// fullView is a task in the full view, with its times as sent.
type fullView struct {
	TaskID        string   `json:"task_id"`
	Status        string   `json:"status"`
	CreatedAt     string   `json:"created_at"`
	StartedAt     string   `json:"started_at"`
	FinishedAt    string   `json:"finished_at"`
	Model         string   `json:"model"`
	Seed          *int64   `json:"seed"`
	QueuePosition *int     `json:"queue_position"`
	Images        []string `json:"images"`
}

func decodeFull(t *testing.T, w interface{ Bytes() []byte }) fullView {
	t.Helper()
	var v fullView
	is.New(t).NoErr(json.Unmarshal(w.Bytes(), &v))
	return v
}

func TestTaskViews(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	e.model.TakesSeeds()
	var ids []string
	for _, body := range []string{t2i, t2i, `{"scene":"text-to-image","prompt":"a fox","seed":42}`} {
		w := e.submit(e.key, body)
		is.Equal(w.Code, http.StatusCreated)
		ids = append(ids, taskID(t, &exchange{respBody: w.Body.Bytes()}))
		e.clock.Advance(time.Millisecond)
	}

	// Without a view, and with view=basic, a pending task is exactly
	// task_id and status.
	for _, query := range []string{"", "?view=basic"} {
		_, keys := fields(t, e.do("GET", "/api/v1/tasks/"+ids[2]+query, e.key, ""))
		is.Equal(keys, []string{"status", "task_id"})
	}

	// The full view of a pending task behind two others.
	w := e.do("GET", "/api/v1/tasks/"+ids[2]+"?view=full", e.key, "")
	is.Equal(w.Code, http.StatusOK)
	_, keys := fields(t, w)
	is.Equal(keys, []string{"created_at", "model", "queue_position", "seed", "status", "task_id"})
	v := decodeFull(t, w.Body)
	is.Equal(*v.QueuePosition, 2)
	is.Equal(v.Model, "scripted")
	is.Equal(*v.Seed, int64(42)) // the request's seed
	created, err := time.Parse(time.RFC3339, v.CreatedAt)
	is.NoErr(err)
	is.Equal(created.Location(), time.UTC)
	is.Equal(*decodeFull(t, e.do("GET", "/api/v1/tasks/"+ids[0]+"?view=full", e.key, "").Body).QueuePosition, 0)

	// Run them all: a finished task's full view has every time.
	e.clock.Advance(time.Second)
	e.runAll()
	w = e.do("GET", "/api/v1/tasks/"+ids[2]+"?view=full", e.key, "")
	_, keys = fields(t, w)
	is.Equal(keys, []string{"created_at", "finished_at", "images", "model", "seed", "started_at", "status", "task_id"})
	v = decodeFull(t, w.Body)
	started, err := time.Parse(time.RFC3339, v.StartedAt)
	is.NoErr(err)
	finished, err := time.Parse(time.RFC3339, v.FinishedAt)
	is.NoErr(err)
	is.True(started.Sub(created) >= time.Second) // it waited in the queue
	is.True(!finished.Before(started))
	is.Equal(*v.Seed, int64(42))
	is.Equal(len(v.Images), 1)
	// The model was handed the seed.
	calls := e.model.Calls()
	is.Equal(*calls[2].Request.Seed, int64(42))
	// A task submitted without a seed got one, and the model had it too.
	drawn := decodeFull(t, e.do("GET", "/api/v1/tasks/"+ids[0]+"?view=full", e.key, "").Body).Seed
	is.True(drawn != nil && *drawn >= 1 && *drawn <= imagegen.MaxSeed) // drawn: never 0
	is.Equal(*calls[0].Request.Seed, *drawn)

	// Without a view, a finished task is exactly the interface's.
	_, keys = fields(t, e.poll(e.key, ids[2]))
	is.Equal(keys, []string{"images", "status", "task_id"})

	// The list takes the view too.
	var page struct {
		Tasks []fullView `json:"tasks"`
	}
	is.NoErr(json.Unmarshal(e.do("GET", "/api/v1/tasks?view=full", e.key, "").Body.Bytes(), &page))
	is.Equal(len(page.Tasks), 3)
	for _, task := range page.Tasks {
		is.True(task.StartedAt != "" && task.FinishedAt != "" && task.Model == "scripted")
	}
	var basic wire.TaskList
	is.NoErr(json.Unmarshal(e.do("GET", "/api/v1/tasks", e.key, "").Body.Bytes(), &basic))
	is.True(basic.Tasks[0].TaskDetails == nil)

	// An unknown or repeated view is refused.
	wantError(t, e.do("GET", "/api/v1/tasks/"+ids[0]+"?view=everything", e.key, ""), http.StatusUnprocessableEntity, wire.APIInvalidParams)
	wantError(t, e.do("GET", "/api/v1/tasks/"+ids[0]+"?view=full&view=basic", e.key, ""), http.StatusUnprocessableEntity, wire.APIInvalidParams)
	wantError(t, e.do("GET", "/api/v1/tasks?view=FULL", e.key, ""), http.StatusUnprocessableEntity, wire.APIInvalidParams)
}

func TestFullViewSeedIsNullForModelsWithoutSeeds(t *testing.T) {
	is := is.New(t)
	e := newEnv(t) // the scripted model takes no seed
	w := e.submit(e.key, `{"scene":"text-to-image","prompt":"a fox","seed":42}`)
	is.Equal(w.Code, http.StatusCreated)
	id := taskID(t, &exchange{respBody: w.Body.Bytes()})
	m, _ := fields(t, e.do("GET", "/api/v1/tasks/"+id+"?view=full", e.key, ""))
	seed, present := m["seed"]
	is.True(present)    // the field is there...
	is.Equal(seed, nil) // ...and null
	e.runAll()
	is.True(e.model.Calls()[0].Request.Seed == nil) // the model was not handed a seed it would ignore
}

func TestLedgerEndpoint(t *testing.T) {
	is := is.New(t)
	e := newEnv(t) // alice has 10 credits; tasks cost 2
	var ids []string
	for range 3 {
		w := e.submit(e.key, t2i)
		is.Equal(w.Code, http.StatusCreated)
		ids = append(ids, taskID(t, &exchange{respBody: w.Body.Bytes()}))
	}
	is.Equal(e.do("POST", "/api/v1/tasks/"+ids[1]+"/cancel", e.key, "").Code, http.StatusOK) // refunded

	var all []wire.LedgerEntry
	target := "/api/v1/credits/ledger?limit=2"
	for pages := 0; ; pages++ {
		is.True(pages < 5)
		w := e.do("GET", target, e.key, "")
		is.Equal(w.Code, http.StatusOK)
		var page wire.Ledger
		is.NoErr(json.Unmarshal(w.Body.Bytes(), &page))
		all = append(all, page.Entries...)
		if page.NextCursor == "" {
			break
		}
		target = "/api/v1/credits/ledger?limit=2&cursor=" + page.NextCursor
	}
	is.Equal(len(all), 5) // grant, 3 charges, a refund
	want := []struct {
		kind   imagegen.LedgerKind
		amount int64
		after  int64
		ref    string
	}{
		{imagegen.LedgerRefund, 2, 6, ids[1]},
		{imagegen.LedgerCharge, -2, 4, ids[2]},
		{imagegen.LedgerCharge, -2, 6, ids[1]},
		{imagegen.LedgerCharge, -2, 8, ids[0]},
		{imagegen.LedgerGrant, 10, 10, ""},
	}
	var sum int64
	for i, x := range all {
		is.Equal(x.Kind, want[i].kind)
		is.Equal(x.Amount, want[i].amount)
		is.Equal(x.BalanceAfter, want[i].after)
		if want[i].ref != "" {
			is.Equal(x.Reference, want[i].ref) // the task id
		}
		is.Equal(x.ID, strconv.Itoa(5-i))
		is.True(!x.CreatedAt.IsZero())
		sum += x.Amount
	}
	is.Equal(sum, e.credits())

	// Bad parameters are refused; another user sees an empty ledger.
	for _, q := range []string{"cursor=zzz", "cursor=99", "limit=0", "limit=101", "limt=2", "limit=1&limit=2"} {
		wantError(t, e.do("GET", "/api/v1/credits/ledger?"+q, e.key, ""), http.StatusUnprocessableEntity, wire.APIInvalidParams)
	}
	is.Equal(e.do("GET", "/api/v1/credits/ledger", e.user("bob", 0), "").Body.String(), `{"entries":[]}`+"\n")
	wantError(t, e.do("GET", "/api/v1/credits/ledger", "", ""), http.StatusUnauthorized, wire.APIUnauthorized)
	wantError(t, e.do("POST", "/api/v1/credits/ledger", e.key, ""), http.StatusMethodNotAllowed, wire.APIMethodNotAllowed)
}

// Times are shown in UTC to the millisecond, whatever precision the
// store kept (the memory store keeps nanoseconds), in the task's full
// view and in the ledger alike.
func TestTimesAreMilliseconds(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	e.clock.Advance(123_456_789 * time.Nanosecond)
	w := e.submit(e.key, t2i)
	is.Equal(w.Code, http.StatusCreated)
	id := taskID(t, &exchange{respBody: w.Body.Bytes()})
	e.clock.Advance(time.Second + 987_654_321*time.Nanosecond)
	e.runAll()
	ms := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z$`)
	v := decodeFull(t, e.do("GET", "/api/v1/tasks/"+id+"?view=full", e.key, "").Body)
	for _, at := range []string{v.CreatedAt, v.StartedAt, v.FinishedAt} {
		is.True(ms.MatchString(at)) // at most three digits of fraction
	}
	is.True(strings.HasSuffix(v.CreatedAt, ".123Z"))
	var ledger struct {
		Entries []struct {
			CreatedAt string `json:"created_at"`
		} `json:"entries"`
	}
	is.NoErr(json.Unmarshal(e.do("GET", "/api/v1/credits/ledger", e.key, "").Body.Bytes(), &ledger))
	is.True(len(ledger.Entries) > 0)
	for _, entry := range ledger.Entries {
		is.True(ms.MatchString(entry.CreatedAt))
	}
}

// A processing task whose model reports progress shows it in the full
// view, from 0 to 1; the basic view stays exactly task_id and status,
// and a task without reports has none.
func TestFullViewProgress(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	reported, release := make(chan struct{}), make(chan struct{})
	e.model.Then(func(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
		g.ReportProgress(0.375)
		close(reported)
		<-release
		return imagegentest.Succeed()(ctx, g)
	})
	w := e.submit(e.key, t2i)
	is.Equal(w.Code, http.StatusCreated)
	id := taskID(t, &exchange{respBody: w.Body.Bytes()})
	_, keys := fields(t, e.do("GET", "/api/v1/tasks/"+id+"?view=full", e.key, ""))
	is.True(!slices.Contains(keys, "progress")) // pending: none yet

	done := make(chan struct{})
	go func() { defer close(done); _, _ = e.svc.RunOnce(context.Background()) }()
	<-reported
	var m map[string]any
	testenv.Eventually(t, 5*time.Second, "the reported progress in the full view", func() bool { // written by the worker's progress writer
		m, keys = fields(t, e.do("GET", "/api/v1/tasks/"+id+"?view=full", e.key, ""))
		return m["progress"] != nil
	})
	is.Equal(m["status"], "processing")
	is.Equal(m["progress"], 0.375)
	is.Equal(keys, []string{"created_at", "model", "progress", "seed", "started_at", "status", "task_id"})
	_, keys = fields(t, e.poll(e.key, id))
	is.Equal(keys, []string{"status", "task_id"}) // the basic view is the interface's
	close(release)
	<-done
	_, keys = fields(t, e.do("GET", "/api/v1/tasks/"+id+"?view=full", e.key, ""))
	is.True(!slices.Contains(keys, "progress")) // finished: none
}
