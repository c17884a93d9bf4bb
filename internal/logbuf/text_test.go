package logbuf_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen/internal/logbuf"
)

// sameAsSlog logs each record through slog's text handler and through
// logbuf's, both built by build, and fails unless the bytes are equal.
func sameAsSlog(t *testing.T, build func(h slog.Handler) slog.Handler, opts *slog.HandlerOptions, records ...slog.Record) {
	t.Helper()
	var want, got bytes.Buffer
	ws, gs := build(slog.NewTextHandler(&want, opts)), build(logbuf.NewTextHandler(&got, opts))
	for _, r := range records {
		if err := ws.Handle(context.Background(), r.Clone()); err != nil {
			t.Fatal(err)
		}
		if err := gs.Handle(context.Background(), r.Clone()); err != nil {
			t.Fatal(err)
		}
	}
	wl, gl := strings.SplitAfter(want.String(), "\n"), strings.SplitAfter(got.String(), "\n")
	for i := range max(len(wl), len(gl)) {
		if i >= len(wl) || i >= len(gl) || wl[i] != gl[i] {
			t.Fatalf("line %d: logbuf's text handler wrote\n%q\nslog's wrote\n%q", i, gl[min(i, len(gl)-1)], wl[min(i, len(wl)-1)])
		}
	}
}

func noWith(h slog.Handler) slog.Handler { return h }

// stringsToTry are values that slog quotes, or does not, for one reason
// or another.
var stringsToTry = []string{"", "plain", "/api/v1/tasks/{task_id}", "with space", "a=b", `q"uote`, `back\slash`, "tab\there",
	"new\nline", "\x00", "\x7f", "µs", "naïve", "\u00a0nbsp", "\u2028", "\xff\xfe", "emoji 🎨", "🎨", "ok-_.:/", "日本語"}

func TestTextHandlerWritesWhatSlogWrites(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 18, 2, 826_999_999, time.UTC)
	var records []slog.Record
	for i, s := range stringsToTry {
		r := slog.NewRecord(now.Add(time.Duration(i)*time.Millisecond), slog.LevelInfo, s, 0)
		r.AddAttrs(slog.String(s, s), slog.String("k", s))
		records = append(records, r)
	}
	r := slog.NewRecord(now, slog.LevelInfo, "request", 0)
	r.AddAttrs(slog.String("method", "GET"), slog.String("route", "/api/v1/tasks/{task_id}"), slog.Int("status", 200),
		slog.Duration("duration", 6973*time.Nanosecond), slog.String("request_id", "e005803ee764b06dbf116f151a74244b"),
		slog.String("key_id", "4dab096cbdb5"), slog.String("empty", ""))
	records = append(records, r)
	for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError, slog.LevelInfo + 2, slog.LevelError + 4, slog.LevelDebug - 3} {
		records = append(records, slog.NewRecord(now, l, "level", 0))
	}
	r = slog.NewRecord(time.Time{}, slog.LevelInfo, "no time", 0)
	r.AddAttrs(slog.Int64("min", math.MinInt64), slog.Uint64("max", math.MaxUint64), slog.Float64("f", 1.5e-300), slog.Float64("nan", math.NaN()),
		slog.Float64("inf", math.Inf(-1)), slog.Bool("b", true), slog.Bool("nb", false), slog.Duration("d0", 0),
		slog.Duration("dmin", math.MinInt64), slog.Duration("dneg", -1500*time.Millisecond), slog.Duration("h", 2540400*time.Hour),
		slog.Time("t", now), slog.Time("t0", time.Time{}))
	records = append(records, r)
	// Values the fast path hands to slog: any, errors, groups, LogValuers, nil.
	r = slog.NewRecord(now, slog.LevelWarn, "others", 0)
	r.AddAttrs(slog.String("first", "x"), slog.Any("err", errors.New("boom here")), slog.Any("nil", nil), slog.Group("g", slog.Int("a", 1)),
		slog.Any("", nil), slog.Any("v", slog.StringValue("lv")), slog.Any("bytes", []byte("b y")), slog.Any("lvl", slog.LevelWarn))
	records = append(records, r)
	r = slog.NewRecord(now, slog.LevelInfo, "inline group", 0)
	r.AddAttrs(slog.Group("", slog.String("a", "b")))
	records = append(records, r)

	opts := []*slog.HandlerOptions{nil, {Level: slog.LevelDebug - 5}}
	for _, o := range opts {
		sameAsSlog(t, noWith, o, records...)
		sameAsSlog(t, func(h slog.Handler) slog.Handler {
			return h.WithAttrs([]slog.Attr{slog.String("task_id", "t 1"), slog.Int("attempt", 2)}).WithAttrs(nil).WithAttrs([]slog.Attr{slog.Bool("x", true)})
		}, o, records...)
		sameAsSlog(t, func(h slog.Handler) slog.Handler {
			return h.WithAttrs([]slog.Attr{slog.String("a", "b")}).WithGroup("grp").WithAttrs([]slog.Attr{slog.Int("c", 3)})
		}, o, records...)
		sameAsSlog(t, func(h slog.Handler) slog.Handler {
			return h.WithAttrs([]slog.Attr{slog.Any("err", errors.New("x y")), slog.String("after", "z")})
		}, o, records...)
	}
	// With ReplaceAttr or AddSource, it is slog's handler.
	replace := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == "k" {
			a.Value = slog.StringValue("replaced")
		}
		return a
	}}
	sameAsSlog(t, noWith, replace, records...)
}

func TestTextHandlerTimesAndDurations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var locs []*time.Location
	for _, name := range []string{"UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "Europe/Amsterdam", "America/St_Johns"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Logf("no zone %s: %v", name, err)
			continue
		}
		locs = append(locs, loc)
	}
	locs = append(locs, time.FixedZone("odd", -(3*3600+25*60+52)), time.Local)
	var records []slog.Record
	for range 3000 {
		var tm time.Time
		switch rng.IntN(4) {
		case 0: // anywhere from year 1 to 9999
			tm = time.Unix(rng.Int64N(253402300799+62135596800)-62135596800, rng.Int64N(1e9))
		case 1: // lines of the same second, then the next
			tm = time.Unix(1_795_000_000+int64(rng.IntN(3)), rng.Int64N(1e9))
		case 2: // near a millisecond boundary
			tm = time.Unix(1_795_000_000, int64(rng.IntN(1000))*1e6+int64(rng.IntN(3))-1)
		default:
			tm = time.Now()
		}
		tm = tm.In(locs[rng.IntN(len(locs))])
		d := time.Duration(rng.Int64())
		if rng.IntN(2) == 0 {
			d = time.Duration(rng.Int64N(int64(2*time.Second))) - time.Second
		}
		r := slog.NewRecord(tm, slog.LevelInfo, "t", 0)
		r.AddAttrs(slog.Duration("d", d), slog.Time("at", tm.Add(d)))
		records = append(records, r)
	}
	sameAsSlog(t, noWith, nil, records...)
}

func FuzzTextHandlerStrings(f *testing.F) {
	for _, s := range stringsToTry {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		r := slog.NewRecord(time.Unix(1_795_000_000, 0), slog.LevelInfo, value, 0)
		r.AddAttrs(slog.String(key, value))
		sameAsSlog(t, noWith, nil, r)
	})
}

func TestTextHandlerLevel(t *testing.T) {
	var buf bytes.Buffer
	h := logbuf.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})
	log := slog.New(h)
	log.Info("hidden")
	log.Warn("shown")
	if h.Enabled(context.Background(), slog.LevelInfo) || !h.Enabled(context.Background(), slog.LevelError) {
		t.Fatal("Enabled does not follow the level")
	}
	if !strings.Contains(buf.String(), "msg=shown") || strings.Contains(buf.String(), "hidden") {
		t.Fatalf("wrote %q", buf.String())
	}
}

// The request line of the API (six attributes) costs no allocation.
func TestTextHandlerRequestLineAllocations(t *testing.T) {
	w := logbuf.New(discard{}, logbuf.Config{Interval: time.Hour})
	defer w.Close()
	log := slog.New(logbuf.Handler(logbuf.NewTextHandler(w, nil), w))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		logbuf.Log(ctx, log, slog.LevelInfo, "request", slog.String("method", "GET"), slog.String("route", "/api/v1/tasks/{task_id}"),
			slog.Int("status", 200), slog.Duration("duration", 6973*time.Nanosecond), slog.String("request_id", "e005803ee764b06dbf116f151a74244b"),
			slog.String("key_id", "4dab096cbdb5"))
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per line", allocs)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func BenchmarkRequestLine(b *testing.B) {
	for _, name := range []string{"slog", "logbuf"} {
		b.Run(name, func(b *testing.B) {
			w := logbuf.New(discard{}, logbuf.Config{Interval: time.Hour})
			defer w.Close()
			var h slog.Handler = slog.NewTextHandler(w, nil)
			if name == "logbuf" {
				h = logbuf.NewTextHandler(w, nil)
			}
			log := slog.New(logbuf.Handler(h, w))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				logbuf.Log(ctx, log, slog.LevelInfo, "request", slog.String("method", "GET"), slog.String("route", "/api/v1/tasks/{task_id}"),
					slog.Int("status", 200), slog.Duration("duration", 6973*time.Nanosecond), slog.String("request_id", "e005803ee764b06dbf116f151a74244b"),
					slog.String("key_id", "4dab096cbdb5"))
			}
		})
	}
}

// LogAt writes through logbuf's handler without a record what slog's
// handler writes from the record: the same bytes, also for attributes the
// fast path hands to slog (nothing of the line is written twice), and a
// warning is written out at once.
func TestLogAtWritesWhatSlogWrites(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 18, 2, 826_000_000, time.UTC)
	lines := [][]slog.Attr{
		{slog.String("method", "GET"), slog.String("route", "/api/v1/tasks/{task_id}"), slog.Int("status", 200),
			slog.String("duration", "6.973µs"), slog.String("request_id", "e005803ee764b06dbf116f151a74244b"), slog.String("key_id", "")},
		{slog.String("task_id", "a b"), slog.Int64("cost", 3)},
		{slog.String("first", "x"), slog.Any("err", errors.New("boom")), slog.String("last", "y")},
		nil,
	}
	var want bytes.Buffer
	slogLog := slog.New(slog.NewTextHandler(&want, nil))
	out := &sink{}
	w := logbuf.New(out, logbuf.Config{Interval: time.Hour})
	defer w.Close()
	log := slog.New(logbuf.Handler(logbuf.NewTextHandler(w, nil), w)).With("proc", "api")
	slogLog = slogLog.With("proc", "api")
	for _, attrs := range lines {
		logbuf.LogAt(context.Background(), slogLog, at, slog.LevelInfo, "request", attrs...)
		logbuf.LogAt(context.Background(), log, at, slog.LevelInfo, "request", attrs...)
	}
	if writes, _ := out.all(); len(writes) != 0 {
		t.Fatalf("info lines were written before a flush: %q", writes)
	}
	logbuf.LogAt(context.Background(), slogLog, at, slog.LevelWarn, "careful", slog.Int("n", 1))
	logbuf.LogAt(context.Background(), log, at, slog.LevelWarn, "careful", slog.Int("n", 1))
	_, got := out.all()
	if got != want.String() {
		t.Fatalf("LogAt through logbuf's handler wrote\n%s\nslog's handler\n%s", got, want.String())
	}
}
