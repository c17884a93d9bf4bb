package storetest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/imagegen/imagegen"
)

// This file holds what RandomOperationsAgreeWithModel checks after each
// step.

// checkTask compares the store's task with the model's, as its owner
// sees it and as another owner does not.
func (m *refModel) checkTask(t *rmTask) {
	m.t.Helper()
	got, err := m.s.Task(ctx, t.owner, t.id)
	if err != nil {
		m.fatalf("task %s: %v", t.id, err)
	}
	switch {
	case got.Status != t.status:
		m.fatalf("task %s is %s, model %s", t.id, got.Status, t.status)
	case got.Attempt != t.attempt || got.Released != t.released:
		m.fatalf("task %s: attempt %d released %d, model %d %d", t.id, got.Attempt, got.Released, t.attempt, t.released)
	case got.Cost != t.cost || got.Model != t.model || got.Owner != t.owner:
		m.fatalf("task %s: cost %d model %s owner %s, model %d %s %s", t.id, got.Cost, got.Model, got.Owner, t.cost, t.model, t.owner)
	case got.StartedAt.IsZero() != (t.attempt == 0):
		m.fatalf("task %s: StartedAt %v after %d claims", t.id, got.StartedAt, t.attempt)
	case got.FinishedAt.IsZero() == t.status.Terminal():
		m.fatalf("task %s (%s): FinishedAt %v", t.id, got.Status, got.FinishedAt)
	}
	switch t.status {
	case imagegen.StatusFailed:
		if got.ErrorCode != t.code || got.Error == "" {
			m.fatalf("task %s failed with %q %q, model code %q", t.id, got.ErrorCode, got.Error, t.code)
		}
		// Refunded now, or before it was requeued free; not when a
		// cancel kept the charge of a started task.
		if got.Refunded == t.outstanding {
			m.fatalf("failed task %s is marked refunded %v, its charge outstanding %v", t.id, got.Refunded, t.outstanding)
		}
	case imagegen.StatusSuccess:
		if (got.Request.Seed == nil) != (t.seed == nil) || (t.seed != nil && *got.Request.Seed != *t.seed) {
			m.fatalf("task %s has seed %v, model %v", t.id, got.Request.Seed, t.seed)
		}
		if !slices.Equal(got.Images, t.images) {
			m.fatalf("task %s has images %v, model %v", t.id, got.Images, t.images)
		}
		if got.Error != "" || got.ErrorCode != "" {
			m.fatalf("task %s succeeded with error %q %q", t.id, got.ErrorCode, got.Error)
		}
		if !t.requeued && got.Refunded {
			m.fatalf("task %s succeeded and is marked refunded", t.id)
		}
	default:
		if got.Error != "" || got.ErrorCode != "" {
			m.fatalf("%s task %s has error %q %q", t.status, t.id, got.ErrorCode, got.Error)
		}
	}
	if at := m.base.Add(m.now); got.CreatedAt.After(at) {
		m.fatalf("task %s created at %v, after now (%v)", t.id, got.CreatedAt, at)
	}
	if t.status == imagegen.StatusPending {
		// A retry's delay sets when it is ready; otherwise it is ready
		// already (a store may keep when it was queued, or nothing).
		if at := m.base.Add(t.runAfter); t.runAfter > m.now && !got.RunAfter.Equal(at) {
			m.fatalf("task %s is ready at %v, model %v", t.id, got.RunAfter, at)
		}
		if at := m.base.Add(m.now); t.runAfter <= m.now && got.RunAfter.After(at) {
			m.fatalf("task %s is ready at %v, later than now, %v", t.id, got.RunAfter, at)
		}
	}
	if t.status == imagegen.StatusProcessing {
		if at := m.base.Add(t.leaseUntil); !got.LeaseUntil.Equal(at) {
			m.fatalf("task %s is leased until %v, model %v", t.id, got.LeaseUntil, at)
		}
		if got.Progress != t.progress {
			m.fatalf("task %s has progress %v, model %v", t.id, got.Progress, t.progress)
		}
	}
	if t.status == imagegen.StatusSuccess {
		for _, id := range t.images {
			img, err := m.s.Image(ctx, id)
			if err != nil || img.TaskID != t.id || img.Owner != t.owner {
				m.fatalf("image %s of task %s: %+v, %v", id, t.id, img, err)
			}
		}
	}
	byID, err := m.s.TaskByID(ctx, t.id)
	if err != nil || byID.Status != got.Status || byID.Attempt != got.Attempt || byID.Owner != t.owner {
		m.fatalf("TaskByID(%s): %+v, %v; Task says %s attempt %d", t.id, byID, err, got.Status, got.Attempt)
	}
	other := pick(m.rng, slices.DeleteFunc(slices.Clone(m.owners), func(o string) bool { return o == t.owner }))
	if _, err := m.s.Task(ctx, other, t.id); !errors.Is(err, imagegen.ErrTaskNotFound) {
		m.fatalf("task %s of %s, read by %s: %v, want ErrTaskNotFound", t.id, t.owner, other, err)
	}
}

// checkOwner compares the owner's balance and ledger with the model's:
// the same entries (a recovery's refunds may come in any order, so as a
// multiset), each entry's BalanceAfter the sum so far, never below 0.
func (m *refModel) checkOwner(owner string) {
	m.t.Helper()
	b, err := m.s.Balance(ctx, owner)
	if err != nil {
		m.fatalf("balance: %v", err)
	}
	if b != m.balances[owner] {
		m.fatalf("%s's balance is %d, model %d", owner, b, m.balances[owner])
	}
	entries, err := m.s.Ledger(ctx, owner)
	if err != nil {
		m.fatalf("ledger: %v", err)
	}
	var sum int64
	got := make([]string, 0, len(entries))
	for _, e := range entries {
		sum += e.Amount
		if e.BalanceAfter != sum || sum < 0 {
			m.fatalf("%s's ledger: entry %s has BalanceAfter %d, the sum so far is %d", owner, e.Ref, e.BalanceAfter, sum)
		}
		got = append(got, fmt.Sprintf("%s %s %d", e.Ref, e.Kind, e.Amount))
	}
	want := make([]string, 0, len(m.ledger[owner]))
	for _, e := range m.ledger[owner] {
		want = append(want, fmt.Sprintf("%s %s %d", e.ref, e.kind, e.amount))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		m.fatalf("%s's ledger:\n%v\nmodel:\n%v", owner, got, want)
	}
	if sum != b {
		m.fatalf("%s's ledger sums to %d, balance %d", owner, sum, b)
	}
}

// checkQueueStats compares the counts of pending and processing tasks.
// The store may count a lapsed lease's task as processing or not until
// it is recovered ("tasks leased to a worker"), so Processing is
// checked only when no lease has lapsed.
func (m *refModel) checkQueueStats() {
	m.t.Helper()
	st, err := m.s.QueueStats(ctx)
	if err != nil {
		m.fatalf("queue stats: %v", err)
	}
	pending := len(m.tasksWhere(isStatus(imagegen.StatusPending)))
	processing := len(m.tasksWhere(isStatus(imagegen.StatusProcessing)))
	lapsed := len(m.tasksWhere(m.lapsed))
	if st.Pending != int64(pending) || (lapsed == 0 && st.Processing != int64(processing)) {
		m.fatalf("queue stats %d pending %d processing, model %d %d (%d lapsed)", st.Pending, st.Processing, pending, processing, lapsed)
	}
	// The oldest ready task has waited since it became ready: queued,
	// or its retry delay ended (its RunAfter, in the model).
	var oldest time.Duration
	for _, t := range m.tasksWhere(func(t *rmTask) bool { return t.status == imagegen.StatusPending && t.runAfter <= m.now }) {
		oldest = max(oldest, m.now-t.runAfter)
	}
	if st.OldestPending != oldest {
		m.fatalf("queue stats: the oldest ready task has waited %v, model %v", st.OldestPending, oldest)
	}
}

// checkPositions reads the queue positions of every task of the seed:
// -1 for those not pending, and for the pending ones each a distinct
// place 0..P-1 (earlier seeds leave no pending task), an owner's
// tasks in the order it queued them. It returns the positions.
func (m *refModel) checkPositions() map[string]int {
	m.t.Helper()
	pos, err := m.s.QueuePositions(ctx, m.order)
	if err != nil {
		m.fatalf("queue positions: %v", err)
	}
	if len(pos) != len(m.order) {
		m.fatalf("%d queue positions for %d ids", len(pos), len(m.order))
	}
	out := map[string]int{}
	var pending []*rmTask
	seen := map[int]bool{}
	for i, id := range m.order {
		t := m.tasks[id]
		out[id] = pos[i]
		if t.status != imagegen.StatusPending {
			if pos[i] != -1 {
				m.fatalf("%s task %s has queue position %d, want -1", t.status, id, pos[i])
			}
			continue
		}
		pending = append(pending, t)
		if pos[i] < 0 || seen[pos[i]] {
			m.fatalf("pending task %s has queue position %d (positions %v)", id, pos[i], pos)
		}
		seen[pos[i]] = true
	}
	for _, a := range pending {
		if out[a.id] >= len(pending) {
			m.fatalf("pending task %s has queue position %d of %d pending", a.id, out[a.id], len(pending))
		}
		for _, b := range pending {
			if a.owner == b.owner && a.line < b.line && out[a.id] > out[b.id] {
				m.fatalf("%s's task %s, queued before %s, has position %d after its %d", a.owner, a.id, b.id, out[a.id], out[b.id])
			}
		}
	}
	return out
}

// checkAll compares every task of the seed and every owner, and the
// owners' task lists by status.
func (m *refModel) checkAll() {
	m.t.Helper()
	for _, id := range m.order {
		m.checkTask(m.tasks[id])
	}
	for _, o := range m.owners {
		m.checkOwner(o)
		for _, st := range []imagegen.Status{imagegen.StatusPending, imagegen.StatusProcessing, imagegen.StatusSuccess, imagegen.StatusFailed} {
			page, err := m.s.ListTasks(ctx, o, st, 100, "")
			if err != nil {
				m.fatalf("list %s's %s tasks: %v", o, st, err)
			}
			var got []string
			for _, task := range page.Tasks {
				got = append(got, task.ID)
			}
			var want []string
			for _, t := range m.tasksWhere(func(t *rmTask) bool { return t.owner == o && t.status == st }) {
				want = append(want, t.id)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) || page.Next != "" {
				m.fatalf("%s's %s tasks %v (next %q), model %v", o, st, got, page.Next, want)
			}
		}
	}
	if !m.h.Sharded {
		m.checkPositions()
	}
	m.checkQueueStats()
	for _, o := range m.owners {
		m.checkLedgerPages(o)
		m.checkListAll(o)
	}
	m.checkSchedulerStats(m.randomLimits())
}

// checkLedgerPages reads the owner's ledger a few entries a page: newest
// first, the entries Ledger gives oldest first.
func (m *refModel) checkLedgerPages(owner string) {
	m.t.Helper()
	all, err := m.s.Ledger(ctx, owner)
	if err != nil {
		m.fatalf("ledger: %v", err)
	}
	var paged []imagegen.LedgerEntry
	cursor := ""
	for range len(all) + 2 {
		page, err := m.s.ListLedger(ctx, owner, 3, cursor)
		if err != nil {
			m.fatalf("list %s's ledger: %v", owner, err)
		}
		paged = append(paged, page.Entries...)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	slices.Reverse(paged)
	if len(paged) != len(all) {
		m.fatalf("%s's ledger pages hold %d entries, Ledger %d", owner, len(paged), len(all))
	}
	for i := range all {
		a, b := all[i], paged[i]
		if a.ID != b.ID || a.Ref != b.Ref || a.Amount != b.Amount || a.BalanceAfter != b.BalanceAfter {
			m.fatalf("%s's ledger entry %d: %+v in Ledger, %+v in its pages", owner, i, a, b)
		}
	}
}

// checkListAll lists the owner's tasks through the operators' listing:
// the model's tasks, each with its status.
func (m *refModel) checkListAll(owner string) {
	m.t.Helper()
	got := map[string]imagegen.Status{}
	cursor := ""
	for range 100 {
		page, err := m.s.ListAllTasks(ctx, imagegen.TaskFilter{Owner: owner}, 7, cursor)
		if err != nil {
			m.fatalf("list all of %s: %v", owner, err)
		}
		for _, task := range page.Tasks {
			got[task.ID] = task.Status
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	want := map[string]imagegen.Status{}
	for _, t := range m.tasksWhere(func(t *rmTask) bool { return t.owner == owner }) {
		want[t.id] = t.status
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		m.fatalf("ListAllTasks of %s: %v, model %v", owner, got, want)
	}
}

// checkSchedulerStats compares what SchedulerStats says l holds back
// now with the model: each ready pending task is held by its owner's
// cap, its model's cap, or its model's pause (model_rate). A task held
// for two reasons may be counted under either, so each count is only
// bounded; the busiest owners' counts and the seed's paused models
// are exact. On a sharded store only the pauses are checked.
func (m *refModel) checkSchedulerStats(l imagegen.Limits) {
	m.t.Helper()
	st, err := m.s.SchedulerStats(ctx, l)
	if err != nil {
		m.fatalf("scheduler stats: %v", err)
	}
	for _, model := range m.models {
		until, paused := st.Paused[model]
		if paused != (m.paused[model] > m.now) {
			m.fatalf("scheduler stats: %s paused %v (until %v), model %v", model, paused, until, m.paused[model]-m.now)
		}
	}
	if m.h.Sharded {
		return
	}
	ownerRun, modelRun := map[string]int{}, map[string]int{}
	for _, t := range m.tasks {
		if m.live(t) {
			ownerRun[t.owner]++
			modelRun[t.model]++
		}
	}
	tally := newHeldTally()
	for _, t := range m.tasksWhere(func(t *rmTask) bool { return t.status == imagegen.StatusPending && t.runAfter <= m.now }) {
		var why []imagegen.HoldReason
		if l.OwnerConcurrency > 0 && ownerRun[t.owner] >= l.OwnerConcurrency {
			why = append(why, imagegen.HeldOwnerCap)
		}
		if c := l.ModelConcurrency[t.model]; c > 0 && modelRun[t.model] >= c {
			why = append(why, imagegen.HeldModelCap)
		}
		if m.paused[t.model] > m.now || (l.ModelRate[t.model] > 0 && m.rateHeld(t)) {
			why = append(why, imagegen.HeldModelRate)
		}
		tally.add(why)
	}
	tally.outside(st.Held, func(r imagegen.HoldReason, n, lo, hi int) {
		m.fatalf("scheduler stats under %+v: %d held by %s, model %d to %d (held %v)", l, n, r, lo, hi, st.Held)
	})
	for _, load := range st.Busiest {
		if !slices.Contains(m.owners, load.Owner) {
			if load.Pending != 0 {
				m.fatalf("scheduler stats: %+v among the busiest, an earlier seed's owner", load)
			}
			continue
		}
		want := imagegen.OwnerLoad{Owner: load.Owner, Pending: m.pendingOf(load.Owner), Running: ownerRun[load.Owner]}
		if load != want {
			m.fatalf("scheduler stats: busiest %+v, model %+v", load, want)
		}
	}
	for _, o := range m.owners {
		if m.pendingOf(o) > 0 && !slices.ContainsFunc(st.Busiest, func(l imagegen.OwnerLoad) bool { return l.Owner == o }) {
			m.fatalf("scheduler stats: %s, with %d pending, is not among the busiest %+v", o, m.pendingOf(o), st.Busiest)
		}
	}
}
