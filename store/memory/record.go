package memory

import (
	"fmt"
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
// status as a number and its times as stamps (no location), and has no
// pointers; its side holds the strings it is submitted with in one
// string (text), and in an extra, made when it first has one, its
// slices and the strings it may gain later. A pending task has two
// pointer words, one of them nil (TestRecordPointerWords), where it had
// twenty-seven; both parts are kept in the store's slab (slab.go),
// where the indexes and queues name them by slot, so nothing else
// points to them.

// A task is kept in two parts, both in the store's slab (slab.go): its
// record, which has no pointers at all, so that the collector marks a
// chunk of a thousand records without looking into it; and its side,
// which holds the task's strings in one (text) and, for the few tasks
// that have any, its slices and what it gains after its submission
// (extra). task is the two together, as the store's code handles them.
type task struct {
	*record
	*side
}

// record is the part of a task with no pointers: its scalars, its
// times as stamps, and its places in the pending queues.
type record struct {
	ends [textFields]uint32 // ends[f] is where field f ends in side.text

	status            state
	seeded            bool
	refunded          bool
	cost              int64
	seed              int64 // Request.Seed, when seeded
	attempt, released int
	progress          float64

	leaseUntil, runAfter, createdAt, updatedAt stamp
	startedAt, finishedAt, expiresAt           stamp

	seq  uint64 // submission order, for listing; 0 in a free slot
	slot slot   // the task's own slot in the store's slab
	// queued is the task's key in the RunAfter queue and fair its node
	// in the fair-share queue while it is pending (kept in the record,
	// so that a pending task costs no allocations of its own for it);
	// their seq is 0 otherwise.
	queued queueKey
	fair   pendingNode
}

// side is the part of a task with pointers.
type side struct {
	// text is the task's ID, Owner, Model, RequestID, Request.Scene, Request.Prompt,
	// Request.AspectRatio, Request.CallbackURL and Request.ImageInput's
	// URLs, one after another (record.ends says where each ends).
	text  string
	extra *extra // nil until the task has one of its fields
}

// extra holds what most tasks do not have: image inputs, callback
// events, and the strings a task gains after its submission.
type extra struct {
	inputs []string // Request.ImageInput, cut from text
	events []imagegen.CallbackEvent
	images []string
	err    string
	code   imagegen.ErrorCode
	// lastErr is the task's LastError.
	lastErr string
	// refundRef is the ledger reference of the next refund: "" for
	// RefundRef(id), else that of an operator's recharge (RequeueTask).
	refundRef string
}

// The fields of side.text, in order.
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

// set makes r the task t, submitted at seq, in slot i. The task holds
// its own copies of t's strings and slices.
func (r task) set(t *imagegen.Task, seq uint64, i slot) {
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
	*r.record = record{
		status: statusOf(t.Status), cost: t.Cost,
		attempt: t.Attempt, released: t.Released, progress: t.Progress, refunded: t.Refunded,
		leaseUntil: stampOf(t.LeaseUntil), runAfter: stampOf(t.RunAfter),
		createdAt: stampOf(t.CreatedAt), updatedAt: stampOf(t.UpdatedAt), startedAt: stampOf(t.StartedAt),
		finishedAt: stampOf(t.FinishedAt), expiresAt: stampOf(t.ExpiresAt),
		seq: seq, slot: i,
	}
	*r.side = side{}
	for i, f := range fields {
		b.WriteString(f)
		r.ends[i] = uint32(b.Len())
	}
	for _, u := range req.ImageInput {
		b.WriteString(u)
	}
	r.text = b.String()
	if req.ImageInput != nil {
		inputs := make([]string, len(req.ImageInput))
		at := int(r.ends[textFields-1])
		for i, u := range req.ImageInput {
			inputs[i] = r.text[at : at+len(u)]
			at += len(u)
		}
		r.extras().inputs = inputs
	}
	if req.CallbackEvents != nil {
		r.extras().events = req.CallbackEvents
	}
	if req.Seed != nil {
		r.seed, r.seeded = *req.Seed, true
	}
	if t.Images != nil || t.Error != "" || t.ErrorCode != "" || t.LastError != "" {
		x := r.extras()
		x.images, x.err, x.code, x.lastErr = slices.Clone(t.Images), t.Error, t.ErrorCode, t.LastError
	}
}

// field returns field f of r.text.
func (r task) field(f int) string {
	start := uint32(0)
	if f > 0 {
		start = r.ends[f-1]
	}
	return r.text[start:r.ends[f]]
}

func (r task) id() string    { return r.field(textID) }
func (r task) owner() string { return r.field(textOwner) }
func (r task) model() string { return r.field(textModel) }

func (r task) callbackURL() string { return r.field(textCallbackURL) }

// extras returns r.extra, made if r has none.
func (r task) extras() *extra {
	if r.extra == nil {
		r.extra = &extra{}
	}
	return r.extra
}

// events returns the callback events r's request asks for.
func (r task) events() []imagegen.CallbackEvent {
	if r.extra == nil {
		return nil
	}
	return r.extra.events
}

// refundRef is the ledger reference of r's next refund.
func (r task) refundRef() string {
	if r.extra != nil && r.extra.refundRef != "" {
		return r.extra.refundRef
	}
	return imagegen.RefundRef(r.id())
}

// images returns the ids of r's images.
func (r task) images() []string {
	if r.extra == nil {
		return nil
	}
	return r.extra.images
}

// view returns r as an imagegen.Task whose times are in loc. Its
// strings are r's (strings do not change); its slices and seed are its
// own, but for its callback events (which no one changes).
func (r task) view(loc *time.Location) imagegen.Task {
	t := imagegen.Task{
		ID: r.id(), Owner: r.owner(), Model: r.model(), RequestID: r.field(textRequestID), Cost: r.cost,
		Request: imagegen.Request{
			Scene: imagegen.Scene(r.field(textScene)), Prompt: r.field(textPrompt),
			AspectRatio: imagegen.AspectRatio(r.field(textAspectRatio)), CallbackURL: r.callbackURL(),
		},
		Status: r.status.name(), Attempt: r.attempt, Released: r.released, Refunded: r.refunded, Progress: r.progress,
		LeaseUntil: r.leaseUntil.in(loc), RunAfter: r.runAfter.in(loc),
		CreatedAt: r.createdAt.in(loc), UpdatedAt: r.updatedAt.in(loc), StartedAt: r.startedAt.in(loc),
		FinishedAt: r.finishedAt.in(loc), ExpiresAt: r.expiresAt.in(loc),
	}
	if r.seeded {
		seed := r.seed
		t.Request.Seed = &seed
	}
	if x := r.extra; x != nil {
		t.Request.ImageInput, t.Request.CallbackEvents = slices.Clone(x.inputs), x.events
		t.Images = slices.Clone(x.images)
		t.Error, t.ErrorCode, t.LastError = x.err, x.code, x.lastErr
	}
	return t
}

// state is a task's status as its record keeps it: a number, not a
// string (which is a pointer).
type state uint8

const (
	noStatus state = iota // the zero imagegen.Status
	statusPending
	statusProcessing
	statusSuccess
	statusFailed
)

var statusNames = [...]imagegen.Status{
	noStatus: "", statusPending: imagegen.StatusPending, statusProcessing: imagegen.StatusProcessing,
	statusSuccess: imagegen.StatusSuccess, statusFailed: imagegen.StatusFailed,
}

// statusOf returns st as a status. The store keeps only the statuses
// imagegen names; any other is a bug of the store's own.
func statusOf(st imagegen.Status) state {
	for i, name := range statusNames {
		if name == st {
			return state(i)
		}
	}
	panic(fmt.Sprintf("memory: unknown task status %q", st))
}

func (st state) name() imagegen.Status { return statusNames[st] }

// terminal reports whether a task in st is finished.
func (st state) terminal() bool { return st.name().Terminal() }

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
