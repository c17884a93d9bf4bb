package console

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
)

// taskView is a task as the pages and the JSON endpoint show it.
type taskView struct {
	ID          string          `json:"id"`
	Status      imagegen.Status `json:"status"`
	Scene       imagegen.Scene  `json:"scene"`
	Prompt      string          `json:"prompt"`
	AspectRatio string          `json:"aspect_ratio"`
	ImageInput  []string        `json:"image_input,omitempty"`
	Cost        int64           `json:"cost"`
	Error       string          `json:"error,omitempty"`
	ErrorCode   string          `json:"error_code,omitempty"`
	Images      []string        `json:"images,omitempty"` // signed URLs
	Model       string          `json:"model"`
	Seed        *int64          `json:"seed,omitempty"` // nil: the model takes no seed
	CreatedAt   time.Time       `json:"created_at"`
	StartedAt   time.Time       `json:"started_at,omitzero"`
	FinishedAt  time.Time       `json:"finished_at,omitzero"`
	Shown       taskShown       `json:"shown"` // progress and timings, as the page writes them
	// Progress is how far a processing task's generation has come (0
	// to 1) when its model reports it, for the page's progress bar; 0
	// otherwise.
	Progress    float64 `json:"progress"`
	Terminal    bool    `json:"terminal"`
	Cancellable bool    `json:"cancellable"`
	Balance     int64   `json:"credits_remaining"`
}

func (c *Console) view(t *imagegen.Task) taskView {
	return taskView{
		ID:          t.ID,
		Status:      t.Status,
		Scene:       t.Request.Scene,
		Prompt:      t.Request.Prompt,
		AspectRatio: string(t.Request.AspectRatio),
		ImageInput:  t.Request.ImageInput,
		Cost:        t.Cost,
		Error:       t.Error,
		ErrorCode:   string(t.ErrorCode),
		Images:      c.imageURLs(t),
		Model:       t.Model,
		Seed:        t.Request.Seed,
		CreatedAt:   t.CreatedAt,
		StartedAt:   t.StartedAt,
		FinishedAt:  t.FinishedAt,
		Shown:       describe(t, c.cfg.Clock.Now(), -1),
		Progress:    progressOf(t),
		Terminal:    t.Status.Terminal(),
		Cancellable: !t.Status.Terminal(),
	}
}

// tasksData is one page of the task list. A page filtered by status
// may hold no task and still have older ones (the store reads a bounded
// stretch of the user's tasks a page: storekit.ListScan).
type tasksData struct {
	Tasks  []taskView
	Status string
	Next   string // cursor of the next page
	Paged  bool   // the page is an older one (a cursor was given)
}

func (c *Console) tasksPage(w http.ResponseWriter, r *http.Request) {
	v := viewerFrom(r.Context())
	q := r.URL.Query()
	status := imagegen.Status(q.Get("status"))
	page, err := c.svc.ListTasks(r.Context(), v.User, status, 20, q.Get("cursor"))
	if c.listFailed(w, r, err, "That list position or status is not valid.") {
		return
	}
	d := tasksData{Status: string(status), Next: page.Next, Paged: q.Get("cursor") != ""}
	for _, t := range page.Tasks {
		d.Tasks = append(d.Tasks, c.view(t))
	}
	c.renderPage(w, r, "tasks", "Tasks", d, flash(r))
}

// progressOf is a processing task's reported progress, else 0.
func progressOf(t *imagegen.Task) float64 {
	if t.Status != imagegen.StatusProcessing {
		return 0
	}
	return t.Progress
}

// taskPage shows one of the user's tasks; another user's task, or none,
// is 404.
func (c *Console) taskPage(w http.ResponseWriter, r *http.Request) {
	if tv, ok := c.loadTask(w, r, 0); ok {
		c.renderPage(w, r, "task", "Task", tv, flash(r))
	}
}

// loadTask reads the viewer's task {id}, after waiting up to wait for it
// to finish, with the viewer's balance. On failure it has answered (404
// for another user's task or none) and returns false.
func (c *Console) loadTask(w http.ResponseWriter, r *http.Request, wait time.Duration) (taskView, bool) {
	v := viewerFrom(r.Context())
	t, err := c.waitTask(r, v.User, r.PathValue("id"), wait) // wait 0: read it now
	if errors.Is(err, imagegen.ErrTaskNotFound) {
		c.notFound(w, r)
		return taskView{}, false
	}
	if err != nil {
		if r.Context().Err() == nil { // else the page went away
			c.serverError(w, r, err)
		}
		return taskView{}, false
	}
	tv := c.view(t)
	if t.Status == imagegen.StatusPending {
		positions, err := c.svc.QueuePositions(r.Context(), []*imagegen.Task{t})
		if err != nil {
			c.serverError(w, r, err)
			return taskView{}, false
		}
		tv.Shown = describe(t, c.cfg.Clock.Now(), positions[0])
	}
	if tv.Balance, err = c.svc.Balance(r.Context(), v.User); err != nil {
		c.serverError(w, r, err)
		return taskView{}, false
	}
	return tv, true
}

// cancelTask cancels the user's pending or processing task: the owner's
// cancel (Service.Cancel), which refunds a pending task and keeps a
// processing one's charge. The notice it leads to says which: a
// refund now, or the task's Refunded (a task an operator retried free
// was refunded then), is "back in the balance"; else the charge was kept.
func (c *Console) cancelTask(w http.ResponseWriter, r *http.Request) {
	v := viewerFrom(r.Context())
	id := r.PathValue("id")
	refund, err := c.svc.CancelWith(r.Context(), v.User, id, imagegen.CancelParams{KeepStartedCharge: true})
	done := "cancelled"
	if err == nil && refund == 0 {
		if t, terr := c.svc.Task(r.Context(), v.User, id); terr != nil || !t.Refunded {
			done = "cancelled-kept" // unread: say nothing came back, which may be short of the truth, not past it
		}
	}
	switch {
	case errors.Is(err, imagegen.ErrTaskNotFound):
		c.notFound(w, r)
	case errors.Is(err, imagegen.ErrInvalidTransition):
		http.Redirect(w, r, c.path("/tasks/"+id+"?done=finished"), http.StatusSeeOther)
	case err != nil:
		c.serverError(w, r, err)
	default:
		http.Redirect(w, r, c.path("/tasks/"+id+"?done="+done), http.StatusSeeOther)
	}
}

// maxPollWait bounds one long-poll of a task page, under the usual proxy
// and server write timeouts.
const maxPollWait = 25 * time.Second

// taskJSON answers the task page's long-poll: the task as soon as it has
// finished, or after ?wait= seconds (at most 25) with its state then. A
// user's sessions hold at most Config.MaxSessionWaits waits at once; beyond,
// 429 at once.
func (c *Console) taskJSON(w http.ResponseWriter, r *http.Request) {
	wait := pollWait(r.URL.Query().Get("wait"))
	if wait > 0 {
		key := viewerFrom(r.Context()).boundsKey()
		if !c.waits.Take(key) {
			c.tooMany(w, r, httpapi.RetryAfterSeconds(waitRetryAfter),
				fmt.Sprintf("Your console sessions already hold %d waits for tasks; close a task page or try again shortly.", c.waits.Max()))
			return
		}
		defer c.waits.Give(key)
	}
	if tv, ok := c.loadTask(w, r, wait); ok {
		writeJSON(w, http.StatusOK, tv)
	}
}

// pollWait is how long the long-poll of ?wait=q seconds waits: at most
// maxPollWait (a number too large for an int too), and not at all when
// q is missing, not a whole number, or not positive. The seconds are
// capped before they become a Duration, which a huge count overflows.
func pollWait(q string) time.Duration {
	n, err := strconv.Atoi(q)
	if n <= 0 || err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0
	}
	return time.Duration(min(n, int(maxPollWait/time.Second))) * time.Second
}

// notice is what a page says after a form went through: a success, or
// neutral information (nothing was changed).
type notice struct{ success, info string }

// flash turns the ?done= of a redirect after a form into a notice.
func flash(r *http.Request) notice {
	switch r.URL.Query().Get("done") {
	case "cancelled":
		return notice{success: "The task was cancelled. What it cost is back in the balance."}
	case "cancelled-kept":
		return notice{success: "The task was cancelled. Its generation had begun, so what it cost stays spent."}
	case "finished":
		return notice{info: "The task had already finished; nothing was changed."}
	case "retried":
		return notice{success: "The task is back in the queue."}
	case "revoked":
		return notice{success: "The key was revoked. It stops working at once."}
	case "sessions-ended":
		return notice{success: "Every console session of the user has ended. Their API keys still work."}
	case "signedout":
		return notice{success: "You are signed out. A copy of this browser's session no longer opens the console."}
	case "signedout-everywhere":
		return notice{success: "You are signed out everywhere: every console session of yours has ended, in every browser."}
	}
	return notice{}
}

func (c *Console) renderPage(w http.ResponseWriter, r *http.Request, name, title string, data any, n notice) {
	c.render(w, r, http.StatusOK, name, page{Title: title, Data: data, Message: n.success, Info: n.info})
}
