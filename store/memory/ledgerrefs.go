package memory

import (
	"strings"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
)

// A ledger is kept whole for the life of the process, an entry for each
// submit at least, so an entry keeps no string for the collector to
// follow where it can help it: the reference of a task's charge or
// refund ("task:<id>", "refund:<id>") whose id is a UUID in canonical
// text (every id imagegen.NewOwnedID makes) is kept as a taskRef, its
// kind as a number, and the references seen (for ErrDuplicateEntry) in
// a map of taskRefs, which has no pointers either. Other references (an
// operator's grant, a recharge's "task:<id>:retry:<n>") are kept as
// strings.

// refForm says how an entry keeps its reference.
type refForm uint8

const (
	refText   refForm = iota // a string: account.texts[entry.text]
	refCharge                // imagegen.ChargeRef(id), id in entry.task
	refRefund                // imagegen.RefundRef(id)
)

// taskRef is the reference of a task's charge or refund, its id as the
// UUID's bytes.
type taskRef struct {
	form refForm
	id   [16]byte
}

// taskRefOf returns ref as a taskRef, or one of form refText when it is
// none.
func taskRefOf(ref string) taskRef {
	for _, p := range [...]struct {
		form   refForm
		prefix string
	}{{refCharge, imagegen.ChargeRefPrefix}, {refRefund, imagegen.RefundRefPrefix}} {
		if id, ok := strings.CutPrefix(ref, p.prefix); ok {
			if u, ok := uuidKey(id); ok {
				return taskRef{form: p.form, id: u}
			}
		}
	}
	return taskRef{}
}

// String is the reference as it was given.
func (t taskRef) String() string {
	id := uuid.UUID(t.id).String()
	if t.form == refRefund {
		return imagegen.RefundRef(id)
	}
	return imagegen.ChargeRef(id)
}

// refString is the reference e.Ref or t (as appendEntryRef takes them).
func refString(ref string, t taskRef) string {
	if t.form != refText {
		return t.String()
	}
	return ref
}

// refSet holds the references of an account's entries. Its methods
// take a reference both as given and as taskRefOf returns it.
type refSet struct {
	tasks map[taskRef]struct{}
	texts map[string]struct{}
}

func (s *refSet) has(ref string, t taskRef) bool {
	if t.form != refText {
		_, dup := s.tasks[t]
		return dup
	}
	_, dup := s.texts[ref]
	return dup
}

func (s *refSet) add(ref string, t taskRef) {
	if t.form != refText {
		if s.tasks == nil {
			s.tasks = make(map[taskRef]struct{})
		}
		s.tasks[t] = struct{}{}
		return
	}
	if s.texts == nil {
		s.texts = make(map[string]struct{})
	}
	s.texts[ref] = struct{}{}
}
