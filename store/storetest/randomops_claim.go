package storetest

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/imagegen/imagegen"
)

// This file holds RandomOperationsAgreeWithModel's claims under limits,
// and the answers of lapsed leases.

// randomLimits returns the limits of a claim: none, or an owner cap, a
// model cap or both (no model cap on a sharded store, whose model caps
// hold within each shard).
func (m *refModel) randomLimits() imagegen.Limits {
	var l imagegen.Limits
	switch m.rng.IntN(4) {
	case 1:
		l.OwnerConcurrency = 1 + m.rng.IntN(2)
	case 2:
		if !m.h.Sharded {
			l.ModelConcurrency = map[string]int{m.models[0]: 1 + m.rng.IntN(2)}
		}
	case 3:
		l.OwnerConcurrency = 1 + m.rng.IntN(2)
		if !m.h.Sharded {
			l.ModelConcurrency = map[string]int{m.models[m.rng.IntN(2)]: 1}
		}
	}
	return m.withRate(l)
}

// withRate adds the seed's rate, if any, to l.
func (m *refModel) withRate(l imagegen.Limits) imagegen.Limits {
	if m.rate > 0 {
		l.ModelRate = map[string]int{m.models[1]: m.rate}
	}
	return l
}

// rateHeld reports whether the seed's rate holds back t's model now.
func (m *refModel) rateHeld(t *rmTask) bool {
	return m.rate > 0 && t.model == m.models[1] && m.nextStart > m.now
}

func (m *refModel) opClaim() {
	if m.rate > 0 { // every claim of the seed enforces its rate: one of one task
		m.claim(1, m.withRate(imagegen.Limits{}), false)
		return
	}
	m.claim(1, imagegen.Limits{}, true)
}

func (m *refModel) opClaimBatch() {
	m.claim(1+m.rng.IntN(4), m.randomLimits(), false)
}

// claimLease is the lease of a claim: the suite's, or a shorter one.
func (m *refModel) claimLease() time.Duration {
	if m.rng.IntN(3) == 0 {
		return 3 * time.Second
	}
	return lease
}

// claim claims up to n tasks under l (through ClaimTask when single)
// and checks them against the model. Candidates are the pending tasks
// that are ready (past RunAfter) and whose model is not paused. On a
// store that is not sharded the fair-share order across owners is read
// from QueuePositions (which counts the pending tasks ahead of each in
// claim order, by tag), since its tags depend on a virtual time that
// docs/scheduling.md defines differently per backend; the claim must
// then take, in that order, each candidate its caps let start, until
// it has n. Within one owner the order is the model's own: oldest
// queued first.
func (m *refModel) claim(n int, l imagegen.Limits, single bool) {
	cands := m.tasksWhere(func(t *rmTask) bool {
		return t.status == imagegen.StatusPending && t.runAfter <= m.now && m.paused[t.model] <= m.now
	})
	var positions map[string]int
	if !m.h.Sharded {
		positions = m.checkPositions()
		sort.SliceStable(cands, func(i, j int) bool { return positions[cands[i].id] < positions[cands[j].id] })
	}
	ownerRun, modelRun := map[string]int{}, map[string]int{}
	for _, t := range m.tasks {
		if m.live(t) {
			ownerRun[t.owner]++
			modelRun[t.model]++
		}
	}
	held := func(t *rmTask) bool {
		if l.OwnerConcurrency > 0 && ownerRun[t.owner] >= l.OwnerConcurrency {
			return true
		}
		c := l.ModelConcurrency[t.model]
		return (c > 0 && modelRun[t.model] >= c) || m.rateHeld(t)
	}
	if slices.ContainsFunc(cands, m.rateHeld) {
		m.note("rate holds one back")
	}
	lease := m.claimLease()
	m.lastOp = fmt.Sprintf("claim %d (lease %v, limits %+v) of %d candidates", n, lease, l, len(cands))
	var got []*imagegen.Task
	var err error
	if single {
		var one *imagegen.Task
		one, err = m.s.ClaimTask(ctx, lease)
		if err == nil {
			got = []*imagegen.Task{one}
		}
	} else {
		got, err = m.s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: lease, N: n, Limits: l})
	}
	if errors.Is(err, imagegen.ErrNoTask) {
		got, err = nil, nil
	} else if err == nil && len(got) == 0 {
		m.fatalf("claimed no task and said no error; a claim of none is ErrNoTask")
	}
	if err != nil {
		m.fatalf("claim: %v", err)
	}
	if len(got) > n {
		m.fatalf("claimed %d tasks, asked for %d", len(got), n)
	}
	m.note(fmt.Sprintf("took %d", len(got)))
	if len(got) < n && len(got) < len(cands) {
		m.note("held back some")
	}
	taken := map[string]bool{}
	var want []string
	if !m.h.Sharded {
		for _, t := range cands {
			if len(want) == n {
				break
			}
			if held(t) {
				continue
			}
			want = append(want, t.id)
			ownerRun[t.owner]++
			modelRun[t.model]++
			m.startRated(t)
		}
		ids := make([]string, len(got))
		for i, g := range got {
			ids[i] = g.ID
		}
		if !slices.Equal(ids, want) {
			m.fatalf("claimed %v, want %v (candidates in claim order %v)", ids, want, m.describe(cands, positions))
		}
	}
	if os.Getenv("IMAGEGEN_TEST_TRACE") != "" {
		for _, g := range got {
			m.trace = append(m.trace, slices.Index(m.order, g.ID))
		}
		m.trace = append(m.trace, -1)
	}
	for _, g := range got {
		t, ok := m.tasks[g.ID]
		switch {
		case !ok:
			m.fatalf("claimed %s, which the model does not know", g.ID)
		case taken[g.ID]:
			m.fatalf("claimed %s twice in one batch", g.ID)
		case !slices.Contains(cands, t):
			m.fatalf("claimed %s, which is not a candidate (%s, ready in %v, model paused for %v)",
				g.ID, t.status, t.runAfter-m.now, m.paused[t.model]-m.now)
		}
		if m.h.Sharded {
			if held(t) {
				m.fatalf("claimed %s beyond a cap", g.ID)
			}
			ownerRun[t.owner]++
			modelRun[t.model]++
			m.startRated(t)
			// Within the owner, oldest queued first.
			for _, o := range cands {
				if o.owner == t.owner && !taken[o.id] && o.line < t.line {
					m.fatalf("claimed %s of %s before its older %s", g.ID, t.owner, o.id)
				}
			}
		}
		taken[g.ID] = true
		t.status = imagegen.StatusProcessing
		t.attempt++
		t.leaseUntil = m.now + lease
		t.progress = 0 // a claim starts from 0
		if t.attempt == 1 {
			m.event(t, imagegen.EventProcessing) // its first claim only
		}
		if g.Status != imagegen.StatusProcessing || g.Attempt != t.attempt || g.Owner != t.owner || g.Released != t.released {
			m.fatalf("claimed task %s: status %s attempt %d released %d owner %s, want processing, %d, %d, %s",
				g.ID, g.Status, g.Attempt, g.Released, g.Owner, t.attempt, t.released, t.owner)
		}
		if g.StartedAt.IsZero() {
			m.fatalf("claimed task %s has no StartedAt", g.ID)
		}
		m.checkTask(t)
	}
}

// startRated notes a start of t under the seed's rate: the model's
// next start is allowed one interval (a minute / rate) from now. (A
// start is never made before the next allowed one, so "1/rate later"
// counts from now: no minute sees more than rate starts.)
func (m *refModel) startRated(t *rmTask) {
	if m.rate > 0 && t.model == m.models[1] {
		m.nextStart = m.now + time.Minute/time.Duration(m.rate)
	}
}

// describe renders tasks with their queue positions, for a failure.
func (m *refModel) describe(ts []*rmTask, positions map[string]int) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = fmt.Sprintf("%s(%s,%s,pos %d,line %d)", t.id, t.owner, t.model, positions[t.id], t.line)
	}
	return out
}

// holder returns a processing task and its current attempt: one whose
// lease still runs, or with lapsed, one whose lease ran out.
func (m *refModel) holder(lapsed bool) *rmTask {
	return m.randomTask(func(t *rmTask) bool {
		if lapsed {
			return m.lapsed(t)
		}
		return m.live(t)
	})
}

// holderOrLapsed picks mostly a live holder, sometimes a lapsed one.
func (m *refModel) holderOrLapsed() *rmTask {
	if m.rng.IntN(4) == 0 {
		if t := m.holder(true); t != nil {
			return t
		}
	}
	return m.holder(false)
}

// lateAnswer checks the answer of an operation by t's attempt, whose
// lease has run out unrecovered, and reports whether the store took
// it. The docs leave it open: ErrLeaseLost lists "it expired" among its
// causes, while the lease's holder is still the only one who could act.
// (A renewal is not among these: an ended lease is never renewed, see
// opRenew.)
func (m *refModel) lateAnswer(t *rmTask, what string, err error) bool {
	if !m.lapsed(t) {
		return false
	}
	switch {
	case err == nil:
		m.lateOutcomes[what+": taken"]++
	case errors.Is(err, imagegen.ErrLeaseLost):
		m.lateOutcomes[what+": ErrLeaseLost"]++
	default:
		m.fatalf("%s by a lapsed attempt: %v, want nil or ErrLeaseLost", what, err)
	}
	return true
}
