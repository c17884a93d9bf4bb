package storetest

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/store/storekit"
)

// This file holds the rest of a task's life in
// RandomOperationsAgreeWithModel: endings, retries, releases, cancels,
// recoveries, requeues, pauses and weights.

func (m *refModel) opComplete() {
	t := m.holderOrLapsed()
	if t == nil {
		return
	}
	m.lastOp = fmt.Sprintf("complete %s attempt %d (lapsed %v)", t.id, t.attempt, m.lapsed(t))
	var images []imagegen.Image
	if m.rng.IntN(2) == 0 {
		img := image(fmt.Sprintf("%s-img-%d", t.id, t.attempt))
		img.TaskID, img.Owner = t.id, t.owner
		images = append(images, img)
	}
	var seed *int64
	if m.rng.IntN(3) == 0 {
		seed = new(int64(m.rng.IntN(1000)))
	}
	err := m.s.CompleteTask(ctx, t.id, t.attempt, images, seed)
	if m.lateAnswer(t, "complete", err) && err != nil {
		m.checkTask(t)
		return
	}
	if err != nil {
		m.fatalf("complete: %v", err)
	}
	t.status = imagegen.StatusSuccess
	t.leaseUntil = 0
	m.event(t, imagegen.EventCompleted)
	if seed != nil {
		t.seed = seed // the model's own seed replaces the request's
	}
	t.images = nil
	for _, img := range images {
		t.images = append(t.images, img.ID)
	}
	m.checkTask(t)
	m.checkOwner(t.owner)
}

func (m *refModel) opFail() {
	t := m.holderOrLapsed()
	if t == nil {
		return
	}
	m.lastOp = fmt.Sprintf("fail %s attempt %d (lapsed %v, outstanding %v)", t.id, t.attempt, m.lapsed(t), t.outstanding)
	refund, err := m.s.FailTask(ctx, t.id, t.attempt, fail("provider down"))
	if m.lateAnswer(t, "fail", err) && err != nil {
		m.checkTask(t)
		m.checkOwner(t.owner)
		return
	}
	if err != nil {
		m.fatalf("fail: %v", err)
	}
	m.note(fmt.Sprintf("refund %v", t.outstanding))
	if want := m.finishFailed(t, imagegen.CodeProviderError); refund != want {
		m.fatalf("fail refunded %d, want %d", refund, want)
	}
	m.checkTask(t)
	m.checkOwner(t.owner)
}

func (m *refModel) opRetry() {
	t := m.holderOrLapsed()
	if t == nil {
		return
	}
	delay := time.Duration(m.rng.IntN(4)) * time.Second
	m.lastOp = fmt.Sprintf("retry %s attempt %d after %v (lapsed %v)", t.id, t.attempt, delay, m.lapsed(t))
	err := m.s.RetryTask(ctx, t.id, t.attempt, delay, "503 from provider")
	if m.lateAnswer(t, "retry", err) && err != nil {
		m.checkTask(t)
		return
	}
	if err != nil {
		m.fatalf("retry: %v", err)
	}
	m.enqueue(t, m.newLine(), delay)
	m.checkTask(t)
}

func (m *refModel) opRelease() {
	t := m.holderOrLapsed()
	if t == nil {
		return
	}
	m.lastOp = fmt.Sprintf("release %s attempt %d (lapsed %v)", t.id, t.attempt, m.lapsed(t))
	err := m.s.ReleaseTask(ctx, t.id, t.attempt)
	if m.lateAnswer(t, "release", err) && err != nil {
		m.checkTask(t)
		return
	}
	if err != nil {
		m.fatalf("release: %v", err)
	}
	t.released++
	m.enqueue(t, m.newLine(), 0)
	m.checkTask(t)
}

func (m *refModel) opProgress() {
	t := m.holderOrLapsed()
	if t == nil {
		return
	}
	p := float64(1+m.rng.IntN(8)) / 8
	m.lastOp = fmt.Sprintf("progress %s attempt %d %v (lapsed %v)", t.id, t.attempt, p, m.lapsed(t))
	err := m.s.SetProgress(ctx, t.id, t.attempt, p)
	if m.lateAnswer(t, "progress", err) && err != nil {
		m.checkTask(t)
		return
	}
	if err != nil {
		m.fatalf("progress: %v", err)
	}
	t.progress = p
	m.checkTask(t)
}

func (m *refModel) opRenew() {
	t := m.holderOrLapsed()
	if t == nil {
		return
	}
	m.lastOp = fmt.Sprintf("renew %s attempt %d (lapsed %v)", t.id, t.attempt, m.lapsed(t))
	err := m.s.RenewLease(ctx, t.id, t.attempt, lease)
	if m.lapsed(t) {
		// An ended lease is not renewed: its slot may have been taken.
		if !errors.Is(err, imagegen.ErrLeaseLost) {
			m.fatalf("renewal of an ended lease: %v, want ErrLeaseLost", err)
		}
		m.lateOutcomes["renew: ErrLeaseLost"]++
		m.checkTask(t)
		return
	}
	if err != nil {
		m.fatalf("renew: %v", err)
	}
	t.leaseUntil = m.now + lease
	m.checkTask(t)
}

// opStale acts with an attempt that does not hold the task: an older
// one, or any attempt on a task that is not processing. Every holder's
// operation says ErrLeaseLost and changes nothing.
func (m *refModel) opStale() {
	t := m.randomTask(func(t *rmTask) bool { return t.attempt > 0 })
	if t == nil {
		return
	}
	attempt := t.attempt
	if t.status == imagegen.StatusProcessing {
		attempt = m.rng.IntN(t.attempt) // 0 .. attempt-1: stale
	}
	m.lastOp = fmt.Sprintf("stale attempt %d of %s (%s, attempt %d)", attempt, t.id, t.status, t.attempt)
	var err error
	switch m.rng.IntN(6) {
	case 0:
		err = m.s.CompleteTask(ctx, t.id, attempt, []imagegen.Image{image(t.id + "-stale")}, nil)
	case 1:
		err = errOf(m.s.FailTask(ctx, t.id, attempt, fail("stale")))
	case 2:
		err = m.s.RetryTask(ctx, t.id, attempt, 0, "stale")
	case 3:
		err = m.s.ReleaseTask(ctx, t.id, attempt)
	case 4:
		err = m.s.RenewLease(ctx, t.id, attempt, lease)
	case 5:
		err = m.s.SetProgress(ctx, t.id, attempt, 0.5)
	}
	if !errors.Is(err, imagegen.ErrLeaseLost) {
		m.fatalf("a stale attempt: %v, want ErrLeaseLost", err)
	}
	m.checkTask(t)
	m.checkOwner(t.owner)
}

func (m *refModel) opCancel() {
	t := m.randomTask(func(*rmTask) bool { return true })
	if t == nil {
		return
	}
	owner := t.owner
	if m.rng.IntN(5) == 0 {
		owner = pick(m.rng, slices.DeleteFunc(slices.Clone(m.owners), func(o string) bool { return o == t.owner }))
	}
	keep := m.rng.IntN(2) == 0
	m.lastOp = fmt.Sprintf("cancel %s (%s of %s) as %s, keep a started charge %v", t.id, t.status, t.owner, owner, keep)
	refund, err := m.s.CancelTask(ctx, owner, t.id, imagegen.CancelParams{KeepStartedCharge: keep})
	switch {
	case owner != t.owner:
		if !errors.Is(err, imagegen.ErrTaskNotFound) {
			m.fatalf("cancel by another owner: %v, want ErrTaskNotFound", err)
		}
	case t.status.Terminal():
		if !errors.Is(err, imagegen.ErrInvalidTransition) {
			m.fatalf("cancel of a finished task: %v, want ErrInvalidTransition", err)
		}
	default:
		if err != nil {
			m.fatalf("cancel: %v", err)
		}
		m.note(fmt.Sprintf("%s, refund %v", t.status, t.outstanding))
		if want := m.finishCancelled(t, keep); refund != want {
			m.fatalf("cancel refunded %d, want %d", refund, want)
		}
	}
	m.checkTask(t)
	m.checkOwner(t.owner)
}

func (m *refModel) opAdvance() {
	d := time.Duration(1+m.rng.IntN(8000)) * time.Millisecond
	m.lastOp = fmt.Sprintf("advance %v", d)
	m.h.Advance(d)
	m.now += d
}

func (m *refModel) opRecover() {
	maxAttempts := 1 + m.rng.IntN(3)
	m.lastOp = fmt.Sprintf("recover, max attempts %d", maxAttempts)
	rec, err := m.s.RecoverExpired(ctx, maxAttempts)
	if err != nil {
		m.fatalf("recover: %v", err)
	}
	requeued, line := 0, m.newLine()
	want := map[string]imagegen.ExpiredTask{}
	for _, t := range m.tasksWhere(m.lapsed) {
		if t.attempt-t.released >= maxAttempts {
			refund := m.finishFailed(t, imagegen.CodeInternal)
			want[t.id] = imagegen.ExpiredTask{ID: t.id, Owner: t.owner, Model: t.model, Attempts: t.attempt - t.released, Cost: t.cost, Refund: refund}
			continue
		}
		requeued++
		m.enqueue(t, line, 0)
	}
	m.note(fmt.Sprintf("requeued %d failed %d", requeued, len(want)))
	if requeued > 1 && os.Getenv("IMAGEGEN_TEST_TRACE") != "" {
		m.trace = append(m.trace, -2)
	}
	if rec.Requeued != requeued {
		m.fatalf("recovery requeued %d, want %d", rec.Requeued, requeued)
	}
	got := map[string]imagegen.ExpiredTask{}
	for _, f := range rec.Failed {
		got[f.ID] = f
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		m.fatalf("recovery failed %v, want %v", got, want)
	}
	m.checkAll()
}

func (m *refModel) opRequeue() {
	t := m.randomTask(isStatus(imagegen.StatusFailed))
	if t == nil || m.rng.IntN(5) == 0 {
		t = m.randomTask(func(*rmTask) bool { return true })
	}
	if t == nil {
		return
	}
	recharge := m.rng.IntN(2) == 0
	m.lastOp = fmt.Sprintf("requeue %s (%s, attempt %d) recharge %v (balance %d)", t.id, t.status, t.attempt, recharge, m.balances[t.owner])
	err := m.s.RequeueTask(ctx, t.id, recharge)
	ref := imagegen.RechargeRef(t.id, t.attempt)
	// A recharge is refused when its reference is used, and when the
	// task's charge is outstanding (a cancel kept it): it would be a
	// second (store.go, RequeueTask).
	taken := m.refs[t.owner][ref] || t.outstanding
	switch {
	case t.status != imagegen.StatusFailed:
		if !errors.Is(err, imagegen.ErrInvalidTransition) {
			m.fatalf("requeue of a %s task: %v, want ErrInvalidTransition", t.status, err)
		}
	case recharge && m.balances[t.owner] < t.cost && taken:
		// The docs do not say which refusal comes first.
		m.note(fmt.Sprintf("short, recharge refused (charge outstanding %v)", t.outstanding))
		if !errors.Is(err, imagegen.ErrInsufficientCredits) && !errors.Is(err, imagegen.ErrDuplicateEntry) {
			m.fatalf("requeue, short and its recharge refused (reference %s taken %v, charge outstanding %v): %v, want ErrInsufficientCredits or ErrDuplicateEntry",
				ref, m.refs[t.owner][ref], t.outstanding, err)
		}
	case recharge && m.balances[t.owner] < t.cost:
		m.note("short")
		if !errors.Is(err, imagegen.ErrInsufficientCredits) {
			m.fatalf("requeue with a recharge beyond the balance: %v, want ErrInsufficientCredits", err)
		}
	case recharge && t.outstanding:
		// Its owner's cancel kept its started charge: never refunded.
		m.note("recharge of a charge outstanding")
		if !errors.Is(err, imagegen.ErrDuplicateEntry) {
			m.fatalf("requeue with a recharge of a task whose charge is outstanding: %v, want ErrDuplicateEntry", err)
		}
	case recharge && m.refs[t.owner][ref]:
		// It failed again before a claim moved its attempt on (it was
		// cancelled while pending): the recharge's reference is taken.
		m.note("recharge reference taken")
		if !errors.Is(err, imagegen.ErrDuplicateEntry) {
			m.fatalf("requeue with a recharge whose reference %s is taken: %v, want ErrDuplicateEntry", ref, err)
		}
	default:
		if err != nil {
			m.fatalf("requeue: %v", err)
		}
		m.note(fmt.Sprintf("done, recharge %v", recharge))
		if recharge {
			m.apply(t.owner, imagegen.LedgerCharge, -t.cost, ref)
			t.outstanding = true
			t.refundRef = imagegen.RerefundRef(t.id, t.attempt)
		}
		t.requeued = true
		t.code = ""
		for _, id := range storekit.TaskWebhookIDs(t.id) { // its queued deliveries are dropped
			delete(m.hooks, id)
		}
		m.enqueue(t, m.newLine(), 0)
	}
	m.checkTask(t)
	m.checkOwner(t.owner)
}

func (m *refModel) opPause() {
	model := pick(m.rng, m.models)
	d := time.Duration(1+m.rng.IntN(8)) * time.Second
	m.lastOp = fmt.Sprintf("pause %s for %v", model, d)
	if err := m.s.PauseModel(ctx, model, d); err != nil {
		m.fatalf("pause: %v", err)
	}
	m.paused[model] = max(m.paused[model], m.now+d) // a pause never shortens one in force
}

func (m *refModel) opWeight() {
	owner, w := m.owner(), 1+m.rng.IntN(3)
	m.lastOp = fmt.Sprintf("weight %s %d", owner, w)
	if err := m.s.SetOwnerWeight(ctx, owner, w); err != nil {
		m.fatalf("set weight: %v", err)
	}
	got, err := m.s.OwnerWeight(ctx, owner)
	if err != nil || got != w {
		m.fatalf("weight reads back %d, %v; want %d", got, err, w)
	}
}
