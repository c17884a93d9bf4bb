package memory

import (
	"slices"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
)

// A store holding many tasks spends its garbage collector's time on
// them: every cycle follows every pointer of every live task. An
// imagegen.Task has about twenty-five pointer words (its strings, slices
// and seed, and the location of each of its seven times), so the store
// does not keep one: a record holds a task's scalars as they are, its
// times as stamps (no location), the strings it is submitted with in
// one string (text), and the strings it may gain later in an outcome
// made when it first has one. A pending task's record then has nine
// pointer words where it had twenty-seven (TestRecordPointerWords), and
// a collection cycle costs about half as much per task as it did
// (BenchmarkCollectTasks). The records are kept in the store's slab
// (slab.go), where the indexes and queues name them by slot: a pending
// task's record is no object of its own, and nothing else points to it.

// record is a task as the store keeps it, with its places in the
// pending queue; view returns it as an imagegen.Task.
type record struct {
	// text is the task's ID, Owner, Model, RequestID, Request.Scene, Request.Prompt,
	// Request.AspectRatio, Request.CallbackURL and Request.ImageInput's
	// URLs, one after another; ends[f] is where field f ends in it.
	text   string
	ends   [textFields]uint32
	inputs []string // Request.ImageInput, cut from text
	events []imagegen.CallbackEvent
	out    *outcome // nil until the task has one of its fields

	status            imagegen.Status
	cost              int64
	seed              int64 // Request.Seed, when seeded
	seeded            bool
	refunded          bool
	attempt, released int
	progress          float64

	leaseUntil, runAfter, createdAt, updatedAt stamp
	startedAt, finishedAt, expiresAt           stamp

	seq  uint64 // submission order, for listing; 0 in a free slot
	slot slot   // the record's own slot in the store's slab
	// queued is the task's key in the RunAfter queue and fair its node
	// in the fair-share queue while it is pending (kept in the record,
	// so that a pending task costs no allocations of its own for it);
	// their seq is 0 otherwise.
	queued queueKey
	fair   pendingNode
}

// The fields of record.text, in order.
const (
	textID = iota
	textOwner
	textModel
	textRequestID
	textScene
	textPrompt
	textAspectRatio
	textCallbackURL
	textFields
)

// outcome holds the strings a task gains after its submission.
type outcome struct {
	images       []string
	err, lastErr string
	code         imagegen.ErrorCode
	// refundRef is the ledger reference of the next refund: "" for
	// RefundRef(id), else that of an operator's recharge (RequeueTask).
	refundRef string
}

// set makes r the record of task t, submitted at seq, in slot i. The
// record holds its own copies of t's strings and slices.
func (r *record) set(t *imagegen.Task, seq uint64, i slot) {
	req := &t.Request
	fields := [textFields]string{t.ID, t.Owner, t.Model, t.RequestID, string(req.Scene), req.Prompt, string(req.AspectRatio), req.CallbackURL}
	n := 0
	for _, f := range fields {
		n += len(f)
	}
	for _, u := range req.ImageInput {
		n += len(u)
	}
	var b strings.Builder
	b.Grow(n)
	*r = record{
		events: req.CallbackEvents, status: t.Status, cost: t.Cost,
		attempt: t.Attempt, released: t.Released, progress: t.Progress, refunded: t.Refunded,
		leaseUntil: stampOf(t.LeaseUntil), runAfter: stampOf(t.RunAfter),
		createdAt: stampOf(t.CreatedAt), updatedAt: stampOf(t.UpdatedAt), startedAt: stampOf(t.StartedAt),
		finishedAt: stampOf(t.FinishedAt), expiresAt: stampOf(t.ExpiresAt),
		seq: seq, slot: i,
	}
	for i, f := range fields {
		b.WriteString(f)
		r.ends[i] = uint32(b.Len())
	}
	for _, u := range req.ImageInput {
		b.WriteString(u)
	}
	r.text = b.String()
	if req.ImageInput != nil {
		r.inputs = make([]string, len(req.ImageInput))
		at := int(r.ends[textFields-1])
		for i, u := range req.ImageInput {
			r.inputs[i] = r.text[at : at+len(u)]
			at += len(u)
		}
	}
	if req.Seed != nil {
		r.seed, r.seeded = *req.Seed, true
	}
	if t.Images != nil || t.Error != "" || t.ErrorCode != "" || t.LastError != "" {
		r.out = &outcome{images: slices.Clone(t.Images), err: t.Error, code: t.ErrorCode, lastErr: t.LastError}
	}
}

// field returns field f of r.text.
func (r *record) field(f int) string {
	start := uint32(0)
	if f > 0 {
		start = r.ends[f-1]
	}
	return r.text[start:r.ends[f]]
}

func (r *record) id() string    { return r.field(textID) }
func (r *record) owner() string { return r.field(textOwner) }
func (r *record) model() string { return r.field(textModel) }

func (r *record) callbackURL() string { return r.field(textCallbackURL) }

// outcome returns r.out, made if r has none.
func (r *record) outcome() *outcome {
	if r.out == nil {
		r.out = &outcome{}
	}
	return r.out
}

// refundRef is the ledger reference of r's next refund.
func (r *record) refundRef() string {
	if r.out != nil && r.out.refundRef != "" {
		return r.out.refundRef
	}
	return imagegen.RefundRef(r.id())
}

// images returns the ids of r's images.
func (r *record) images() []string {
	if r.out == nil {
		return nil
	}
	return r.out.images
}

// view returns r as an imagegen.Task whose times are in loc. Its
// strings are r's (strings do not change); its slices and seed are its
// own.
func (r *record) view(loc *time.Location) imagegen.Task {
	t := imagegen.Task{
		ID: r.id(), Owner: r.owner(), Model: r.model(), RequestID: r.field(textRequestID), Cost: r.cost,
		Request: imagegen.Request{
			Scene: imagegen.Scene(r.field(textScene)), Prompt: r.field(textPrompt),
			AspectRatio: imagegen.AspectRatio(r.field(textAspectRatio)), CallbackURL: r.callbackURL(),
			ImageInput: slices.Clone(r.inputs), CallbackEvents: r.events,
		},
		Status: r.status, Attempt: r.attempt, Released: r.released, Refunded: r.refunded, Progress: r.progress,
		LeaseUntil: r.leaseUntil.in(loc), RunAfter: r.runAfter.in(loc),
		CreatedAt: r.createdAt.in(loc), UpdatedAt: r.updatedAt.in(loc), StartedAt: r.startedAt.in(loc),
		FinishedAt: r.finishedAt.in(loc), ExpiresAt: r.expiresAt.in(loc),
	}
	if r.seeded {
		seed := r.seed
		t.Request.Seed = &seed
	}
	if o := r.out; o != nil {
		t.Images = slices.Clone(o.images)
		t.Error, t.ErrorCode, t.LastError = o.err, o.code, o.lastErr
	}
	return t
}

// stamp is a time.Time without its location, so that the collector has
// nothing to follow in it: the seconds since January 1 of year 1, UTC,
// and the nanoseconds. The zero stamp is the zero time.
type stamp struct {
	sec  int64
	nsec int32
}

// year1ToUnix is the number of seconds from the zero time to the Unix
// epoch.
const year1ToUnix = 62135596800

func stampOf(t time.Time) stamp {
	return stamp{sec: t.Unix() + year1ToUnix, nsec: int32(t.Nanosecond())}
}

// in returns s as a time in loc; the zero stamp is the zero time.
func (s stamp) in(loc *time.Location) time.Time {
	if s.isZero() {
		return time.Time{}
	}
	return time.Unix(s.sec-year1ToUnix, int64(s.nsec)).In(loc)
}

func (s stamp) isZero() bool { return s == stamp{} }

// before reports whether s is before o.
func (s stamp) before(o stamp) bool {
	return s.sec < o.sec || s.sec == o.sec && s.nsec < o.nsec
}

// unixNano is s in nanoseconds since the Unix epoch (for queue order).
func (s stamp) unixNano() int64 {
	return (s.sec-year1ToUnix)*1e9 + int64(s.nsec)
}
