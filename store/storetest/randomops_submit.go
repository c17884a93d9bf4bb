package storetest

import (
	"errors"
	"fmt"

	"github.com/imagegen/imagegen"
)

// This file holds RandomOperationsAgreeWithModel's submits.

func (m *refModel) opCreate() {
	owner, cost, model := m.owner(), int64(1+m.rng.IntN(3)), pick(m.rng, m.models)
	var p imagegen.CreateParams
	if m.rng.IntN(2) == 0 {
		p.MaxPending = 1 + m.rng.IntN(4)
	}
	task := newTask(owner, cost)
	task.ID = m.newID(owner)
	task.Model = model
	if m.rng.IntN(2) == 0 {
		task.Request.CallbackURL = "https://app.example.com/hooks/" + owner
		task.Request.CallbackEvents = pick(m.rng, [][]imagegen.CallbackEvent{
			nil, {imagegen.EventProcessing}, {imagegen.EventCompleted}, {imagegen.EventProcessing, imagegen.EventCompleted},
		})
	}
	m.lastOp = fmt.Sprintf("create %s of %s, cost %d, max pending %d (balance %d, pending %d)",
		task.ID, owner, cost, p.MaxPending, m.balances[owner], m.pendingOf(owner))
	b, err := m.s.CreateTask(ctx, task, p)
	short := m.balances[owner] < cost
	full := p.MaxPending > 0 && m.pendingOf(owner) >= p.MaxPending
	switch {
	case short && full: // the docs do not say which refusal comes first
		m.note("short and full")
		if !errors.Is(err, imagegen.ErrInsufficientCredits) && !errors.Is(err, imagegen.ErrQueueFull) {
			m.fatalf("create, short and full: %v, want ErrInsufficientCredits or ErrQueueFull", err)
		}
	case short:
		m.note("short")
		if !errors.Is(err, imagegen.ErrInsufficientCredits) {
			m.fatalf("create beyond the balance: %v, want ErrInsufficientCredits", err)
		}
	case full:
		m.note("full")
		if !errors.Is(err, imagegen.ErrQueueFull) {
			m.fatalf("create beyond the pending cap: %v, want ErrQueueFull", err)
		}
	default:
		if err != nil {
			m.fatalf("create: %v", err)
		}
		rt := &rmTask{
			id: task.ID, owner: owner, model: model, cost: cost,
			outstanding: true, refundRef: imagegen.RefundRef(task.ID),
			url: task.Request.CallbackURL, events: task.Request.CallbackEvents,
		}
		m.enqueue(rt, m.newLine(), 0)
		m.tasks[task.ID] = rt
		m.order = append(m.order, task.ID)
		m.apply(owner, imagegen.LedgerCharge, -cost, imagegen.ChargeRef(task.ID))
		if b != m.balances[owner] {
			m.fatalf("create returned balance %d, model %d", b, m.balances[owner])
		}
	}
	if err != nil {
		if _, gerr := m.s.Task(ctx, owner, task.ID); !errors.Is(gerr, imagegen.ErrTaskNotFound) {
			m.fatalf("a refused task: Task says %v, want ErrTaskNotFound", gerr)
		}
	} else {
		if m.base.IsZero() {
			got, err := m.s.Task(ctx, owner, task.ID)
			if err != nil {
				m.fatalf("task %s: %v", task.ID, err)
			}
			m.base = got.CreatedAt.Add(-m.now)
		}
		m.checkTask(m.tasks[task.ID])
	}
	m.checkOwner(owner)
}

// newID returns an id as imagegen.NewOwnedID makes one, its random bits
// drawn from the seed's source, so that a store that orders tasks by id
// (where the docs leave the order open: the tasks one recovery
// requeues) orders them alike in every run of the seed.
func (m *refModel) newID(owner string) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(m.rng.Uint32())
	}
	mark := imagegen.OwnerMark(owner)
	b[0], b[1] = byte(mark>>8), byte(mark)
	b[6] = b[6]&0x0f | 0x80 // version 8
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
