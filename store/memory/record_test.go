package memory

import (
	"context"
	"reflect"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// newRecord returns the record of task t, submitted at seq, in a slot of
// its own.
func newRecord(t *imagegen.Task, seq uint64) task {
	var b slab
	i := b.alloc()
	r := b.at(i)
	r.set(t, seq, i)
	return r
}

// TestRecordKeepsEveryField: a task with every field set comes back
// from its record as it went in, so a field added to imagegen.Task that
// the record does not carry fails here.
func TestRecordKeepsEveryField(t *testing.T) {
	loc := time.FixedZone("test", 3600)
	var task imagegen.Task
	fillFields(t, reflect.ValueOf(&task).Elem(), loc)
	if task.Request.Seed == nil || task.Images == nil || task.LeaseUntil.IsZero() {
		t.Fatalf("fillFields left fields unset: %+v", task)
	}
	task.Status = imagegen.StatusProcessing // the store keeps the statuses imagegen names (TestStatusesRoundTrip)
	got := newRecord(&task, 1).view(loc)
	if !reflect.DeepEqual(got, task) {
		t.Fatalf("record changed the task:\n got %+v\nwant %+v", got, task)
	}
	// The view's slices and seed are its own.
	got.Images[0], got.Request.ImageInput[0], *got.Request.Seed = "changed", "changed", -1
	if again := newRecord(&task, 1).view(loc); !reflect.DeepEqual(again, task) {
		t.Fatalf("a view shares memory with its record: %+v", again)
	}
}

// TestRecordZeroTimes: unset times stay the zero time, in any location.
func TestRecordZeroTimes(t *testing.T) {
	task := imagegen.Task{ID: "t", CreatedAt: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)}
	got := newRecord(&task, 1).view(time.Local)
	if !got.LeaseUntil.IsZero() || got.LeaseUntil != (time.Time{}) {
		t.Fatalf("LeaseUntil = %#v, want the zero time", got.LeaseUntil)
	}
	if !got.CreatedAt.Equal(task.CreatedAt) {
		t.Fatalf("CreatedAt = %v, want %v", got.CreatedAt, task.CreatedAt)
	}
}

// fillFields sets every field of v to a value of its own, its times in
// loc.
func fillFields(t *testing.T, v reflect.Value, loc *time.Location) {
	n := 0
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		n++
		switch {
		case v.Type() == reflect.TypeOf(time.Time{}):
			v.Set(reflect.ValueOf(time.Date(2026, 11, 26, 10, 0, n, n*1000, loc)))
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		case v.Kind() == reflect.String:
			v.SetString("s" + strconv.Itoa(n))
		case v.Kind() == reflect.Int || v.Kind() == reflect.Int64:
			v.SetInt(int64(n))
		case v.Kind() == reflect.Float64:
			v.SetFloat(float64(n) / 100)
		case v.Kind() == reflect.Bool:
			v.SetBool(true)
		case v.Kind() == reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem())
		case v.Kind() == reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
			fill(v.Index(0))
			fill(v.Index(1))
		default:
			t.Fatalf("fillFields: no value for a %s", v.Type())
		}
	}
	fill(v)
}

// TestStatusesRoundTrip: a record keeps each status imagegen names, and
// the zero one, as a number it reads back as that status.
func TestStatusesRoundTrip(t *testing.T) {
	for _, st := range []imagegen.Status{"", imagegen.StatusPending, imagegen.StatusProcessing, imagegen.StatusSuccess, imagegen.StatusFailed} {
		if got := statusOf(st).name(); got != st {
			t.Errorf("status %q reads back as %q", st, got)
		}
		if statusOf(st).terminal() != st.Terminal() {
			t.Errorf("status %q: terminal %v", st, statusOf(st).terminal())
		}
	}
}

// TestRecordPointerWords: a record has no pointers for the collector to
// follow and a side two (see task), where an imagegen.Task has about
// twenty-five.
func TestRecordPointerWords(t *testing.T) {
	if n := pointerWords(reflect.TypeOf(record{})); n > 0 {
		t.Fatalf("a record has %d pointer words, want none", n)
	}
	if n := pointerWords(reflect.TypeOf(side{})); n > 2 {
		t.Fatalf("a side has %d pointer words, want at most 2", n)
	}
	if n := pointerWords(reflect.TypeOf(entry{})); n > 0 {
		t.Fatalf("a ledger entry has %d pointer words, want none", n)
	}
}

// pointerWords counts the words of a value of type typ that may hold
// a pointer.
func pointerWords(typ reflect.Type) int {
	switch typ.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.String, reflect.Slice:
		return 1
	case reflect.Interface:
		return 2
	case reflect.Struct:
		n := 0
		for i := range typ.NumField() {
			n += pointerWords(typ.Field(i).Type)
		}
		return n
	case reflect.Array:
		return typ.Len() * pointerWords(typ.Elem())
	}
	return 0
}

// BenchmarkCollectTasks measures a garbage collection cycle of a store
// holding 100k pending tasks, per task (ns/task), and the heap a task
// takes (B/task): what the store's tasks cost a server that collects
// while they live.
func BenchmarkCollectTasks(b *testing.B) {
	const n = 100_000
	s, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: "bench", Kind: imagegen.LedgerGrant, Amount: n, Ref: "grant"}); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		seed := int64(i + 1)
		task := &imagegen.Task{
			ID: imagegen.NewOwnedID("bench"), Owner: "bench", Model: "model", Cost: 1, RequestID: strconv.Itoa(i),
			Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse at dusk, oil painting " + strconv.Itoa(i), AspectRatio: imagegen.Aspect16x9, Seed: &seed},
		}
		if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ResetTimer()
	for range b.N {
		runtime.GC()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/task")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/task")
	runtime.KeepAlive(s)
}
