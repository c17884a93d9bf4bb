package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/pgtext"
)

// recentScanLimit bounds how many of the tasks created in the last
// chartLookback the dashboard reads (pages of imagegen.MaxListLimit, 50
// store reads at most); beyond it the counts and charts say they are
// partial.
const recentScanLimit = 5000

// opsData is the operator's dashboard: the queue, the last hour's tasks
// by status and failures by code, the last hour's provider calls by
// outcome and fallbacks, and a look at one user.
type opsData struct {
	Queue    imagegen.QueueStats
	Sched    imagegen.SchedulerStats // busiest owners, paused models
	Held     map[string]int          // ready tasks held back, by imagegen.HoldReason
	ByStatus []count
	Failures []count
	Counted  int  // tasks counted in the last hour
	Capped   bool // more than recentScanLimit: the counts are partial
	// Charts draw the last hour per minute (lastHour); ScannedSince is
	// when the oldest task they count was created.
	Charts       []svgChart
	Scanned      int
	ScannedSince time.Time

	Outcomes  []string      // the columns of Providers: success first, then by name
	Providers []providerRow // by name
	Fallbacks []imagegen.FallbackCount
	Flush     time.Duration // how often workers write their counts

	Owner   string
	Found   bool
	Balance int64
	Tasks   []taskView
	Keys    []imagegen.APIKey
}

type count struct {
	Name string
	N    int
}

// providerRow is one provider's calls in the last hour: a count per
// outcome (one per column of opsData.Outcomes), the total, and the share
// that succeeded.
type providerRow struct {
	Name    string
	Cells   []outcomeCell
	Total   int64
	Success string // "97%"
}

type outcomeCell struct {
	Outcome string
	N       int64
}

// opsPage (operators only) shows the dashboard and, with ?owner=, one
// user's balance, 20 newest tasks (with retry and cancel, each needing a
// reason) and keys.
func (c *Console) opsPage(w http.ResponseWriter, r *http.Request) {
	owner := strings.TrimSpace(r.URL.Query().Get("owner"))
	c.showOps(w, r, http.StatusOK, owner, "", flash(r))
}

func (c *Console) showOps(w http.ResponseWriter, r *http.Request, status int, owner, errMsg string, n notice) {
	ctx := r.Context()
	in := c.svc.Inspector()
	d := opsData{Owner: owner}
	var err error
	if d.Queue, err = in.QueueStats(ctx); err != nil {
		c.serverError(w, r, err)
		return
	}
	if d.Sched, err = c.svc.SchedulerStats(ctx); err != nil {
		c.serverError(w, r, err)
		return
	}
	d.Held = map[string]int{}
	for _, why := range imagegen.HoldReasons() {
		d.Held[string(why)] = d.Sched.Held[why]
	}
	if err := c.lastHourOfTasks(ctx, &d); err != nil {
		c.serverError(w, r, err)
		return
	}
	if err := c.providersLastHour(ctx, &d); err != nil {
		c.serverError(w, r, err)
		return
	}
	if owner != "" && pgtext.Storable(owner) { // any other names nobody (and PostgreSQL refuses it)
		if d.Balance, err = c.svc.Balance(ctx, owner); err != nil {
			c.serverError(w, r, err)
			return
		}
		page, err := in.ListTasks(ctx, imagegen.TaskFilter{Owner: owner}, 20, "")
		if err != nil {
			c.serverError(w, r, err)
			return
		}
		for _, t := range page.Tasks {
			d.Tasks = append(d.Tasks, c.view(t))
		}
		if d.Keys, err = c.svc.Keys(ctx, owner); err != nil {
			c.serverError(w, r, err)
			return
		}
		d.Found = len(d.Tasks) > 0 || len(d.Keys) > 0 || d.Balance != 0
	}
	c.render(w, r, status, "ops", page{Title: "Operator", Data: d, Error: errMsg, Message: n.success, Info: n.info})
}

// lastHourOfTasks reads the tasks created in the last chartLookback
// (newest first, at most recentScanLimit), counts those of the last hour
// by status and the failed ones by error code, and draws the charts.
func (c *Console) lastHourOfTasks(ctx context.Context, d *opsData) error {
	now := c.cfg.Clock.Now()
	tasks, capped, err := c.recentTasks(ctx, now.Add(-chartLookback))
	if err != nil {
		return err
	}
	d.Capped, d.Scanned = capped, len(tasks)
	d.ScannedSince = now.Add(-chartLookback)
	if capped && len(tasks) > 0 {
		d.ScannedSince = tasks[len(tasks)-1].CreatedAt
	}
	mins := lastHour(tasks, d.Queue, now)
	d.Charts = []svgChart{finishedChart(mins), generationChart(mins), queueChart(mins)}
	byStatus := map[imagegen.Status]int{}
	byCode := map[string]int{}
	for _, t := range tasks {
		if t.CreatedAt.Before(now.Add(-time.Hour)) {
			continue
		}
		d.Counted++
		byStatus[t.Status]++
		if t.Status == imagegen.StatusFailed {
			byCode[string(t.ErrorCode)]++
		}
	}
	for _, s := range []imagegen.Status{imagegen.StatusPending, imagegen.StatusProcessing, imagegen.StatusSuccess, imagegen.StatusFailed} {
		d.ByStatus = append(d.ByStatus, count{string(s), byStatus[s]})
	}
	for code, n := range byCode {
		d.Failures = append(d.Failures, count{code, n})
	}
	slices.SortFunc(d.Failures, func(a, b count) int { // most first, then by name
		return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Name, b.Name))
	})
	return nil
}

// recentTasks returns the tasks of every owner created since since,
// newest first, and whether there were more than recentScanLimit (then
// it returns the newest ones).
func (c *Console) recentTasks(ctx context.Context, since time.Time) ([]*imagegen.Task, bool, error) {
	var tasks []*imagegen.Task
	cursor := ""
	for {
		page, err := c.svc.Inspector().ListTasks(ctx, imagegen.TaskFilter{Since: since}, imagegen.MaxListLimit, cursor)
		if err != nil {
			return nil, false, err
		}
		tasks = append(tasks, page.Tasks...)
		switch {
		case page.Next == "":
			return tasks, false, nil
		case len(tasks) >= recentScanLimit:
			return tasks, true, nil
		}
		cursor = page.Next
	}
}

// providersLastHour reads the provider calls by outcome and the
// fallbacks that every worker on the store counted in the last hour
// (imagegen.Inspector.ProviderStats), one row per provider.
func (c *Console) providersLastHour(ctx context.Context, d *opsData) error {
	st, err := c.svc.Inspector().ProviderStats(ctx, time.Hour)
	if err != nil {
		return err
	}
	d.Fallbacks, d.Flush = st.Fallbacks, imagegen.ProviderStatsFlushInterval
	byProvider := map[string]map[string]int64{}
	for _, r := range st.Requests {
		if byProvider[r.Provider] == nil {
			byProvider[r.Provider] = map[string]int64{}
			d.Providers = append(d.Providers, providerRow{Name: r.Provider}) // sorted by provider already
		}
		byProvider[r.Provider][r.Outcome] += r.N
		if !slices.Contains(d.Outcomes, r.Outcome) {
			d.Outcomes = append(d.Outcomes, r.Outcome)
		}
	}
	notSuccess := func(o string) int {
		if o == imagegen.OutcomeSuccess {
			return 0
		}
		return 1
	}
	slices.SortFunc(d.Outcomes, func(a, b string) int { // success first, then by name
		return cmp.Or(cmp.Compare(notSuccess(a), notSuccess(b)), cmp.Compare(a, b))
	})
	for i := range d.Providers {
		row := &d.Providers[i]
		for _, o := range d.Outcomes {
			n := byProvider[row.Name][o]
			row.Cells = append(row.Cells, outcomeCell{Outcome: o, N: n})
			row.Total += n
		}
		if row.Total > 0 {
			row.Success = fmt.Sprintf("%d%%", byProvider[row.Name][imagegen.OutcomeSuccess]*100/row.Total)
		}
	}
	return nil
}

// opsCancel (operators only) cancels any user's pending or processing
// task (refunded) through the Inspector, which logs the reason.
func (c *Console) opsCancel(w http.ResponseWriter, r *http.Request) {
	c.opsAction(w, r, "cancelled", func(ctx context.Context, id, reason string) error {
		return c.svc.Inspector().Cancel(ctx, id, reason)
	})
}

// opsRetry (operators only) gives a failed task back to the queue, free
// or charged again (recharge=1), through the Inspector.
func (c *Console) opsRetry(w http.ResponseWriter, r *http.Request) {
	recharge := r.PostForm.Get("recharge") == "1"
	c.opsAction(w, r, "retried", func(ctx context.Context, id, reason string) error {
		return c.svc.Inspector().Retry(ctx, id, recharge, reason)
	})
}

// opsAction runs an inspector action on task {id} with the form's
// reason (opsReason), logs who did it, and goes back to the user's page.
func (c *Console) opsAction(w http.ResponseWriter, r *http.Request, done string, act func(ctx context.Context, id, reason string) error) {
	owner, id := r.PostForm.Get("owner"), r.PathValue("id")
	reason, ok := c.opsReason(w, r, owner)
	if !ok {
		return
	}
	err := act(r.Context(), id, reason)
	switch {
	case errors.Is(err, imagegen.ErrTaskNotFound):
		c.notFound(w, r)
	case errors.Is(err, imagegen.ErrInvalidTransition):
		c.showOps(w, r, http.StatusConflict, owner, "The task is not in a state that allows this; nothing was changed.", notice{})
	case errors.Is(err, imagegen.ErrInsufficientCredits):
		c.showOps(w, r, http.StatusPaymentRequired, owner, "The user's balance is too short to charge the retry; nothing was changed.", notice{})
	case errors.Is(err, imagegen.ErrDuplicateEntry):
		c.showOps(w, r, http.StatusConflict, owner, "A charge would charge the task twice (it was charged again at this attempt already, or its owner cancelled it once it had begun and it kept its charge); retry it without a charge. Nothing was changed.", notice{})
	case err != nil:
		c.serverError(w, r, err)
	default:
		http.Redirect(w, r, c.path("/ops?owner="+urlQueryEscape(owner)+"&done="+done), http.StatusSeeOther)
	}
}

// opsReason is the reason an operator's form gives for its action, as it
// is logged: "by <operator>: <reason>". A missing or overlong reason
// (over 500 bytes) is answered 422 on the operator's page, with ok
// false.
func (c *Console) opsReason(w http.ResponseWriter, r *http.Request, owner string) (reason string, ok bool) {
	reason = strings.TrimSpace(r.PostForm.Get("reason"))
	if reason == "" || len(reason) > 500 {
		c.showOps(w, r, http.StatusUnprocessableEntity, owner, "Give a reason (1 to 500 characters): it is logged with the action.", notice{})
		return "", false
	}
	return "by " + viewerFrom(r.Context()).User + ": " + reason, true
}
