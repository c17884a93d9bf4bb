package providertest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// wrongKey is the key BadKey sends; the fakes echo what they get, so a
// key the adapter does not scrub shows in its error.
const wrongKey = "WRONG-KEY-0123456789abcdefghijklmnop"

// timeoutDeadline is a Timeouts scenario's deadline when it names none,
// and giveUpBound how long after it the adapter must have given up.
const (
	timeoutDeadline = time.Second // room for a loaded machine (and -race) to send the request first
	giveUpBound     = 5 * time.Second
)

// Run runs h's scenarios, each as a subtest. Beyond what a scenario
// says, it checks for every generation the calls the fake received and
// the waits on the clock; for a success, the image's type and size; for
// a failure, that the error is a *imagegen.ModelError of h.Provider
// with the outcome, causes and errors.Is the scenario names, in which
// the key shows nowhere. It also checks that the key shows nowhere the
// adapter's config or model may be printed or logged.
func Run[F Fake, C any, M Model](t *testing.T, h Harness[F, C, M]) {
	t.Helper()
	h.checkComplete(t)
	t.Run("New", func(t *testing.T) { each(t, h.Constructions, h.construct) })
	t.Run("text-to-image", func(t *testing.T) { each(t, h.TextToImage, h.succeed) })
	t.Run("image-to-image", func(t *testing.T) { each(t, h.ImageToImage, h.succeed) })
	t.Run("unplannable", func(t *testing.T) { each(t, h.Unplannable, h.unplannable) })
	t.Run("aspect ratios", func(t *testing.T) { each(t, h.AspectRatios, h.ratios) })
	t.Run("refusal", func(t *testing.T) { each(t, h.Refusals, h.refusal) })
	t.Run("429 then success", func(t *testing.T) { each(t, h.RateLimited, h.succeed) })
	t.Run("5xx then success", func(t *testing.T) { each(t, h.ServerErrors, h.succeed) })
	t.Run("timeout", func(t *testing.T) { each(t, h.Timeouts, h.timeout) })
	t.Run("bad key", func(t *testing.T) { h.badKey(t, h.BadKey) })
	if h.GiveUp != nil {
		t.Run("cancel on give-up", func(t *testing.T) { h.giveUp(t, *h.GiveUp) })
	}
	t.Run("failures", func(t *testing.T) {
		each(t, h.Failures, func(t *testing.T, c Failure[F, C]) { h.fail(t, context.Background(), c, c.Config, c.Want) })
	})
	if h.SentSeed != nil {
		t.Run("seed", h.seed)
	}
	t.Run("the key never shows", h.keyNeverShows)
}

// each runs run for every item of items, as a subtest named after it.
func each[T interface{ name() string }](t *testing.T, items []T, run func(*testing.T, T)) {
	for _, item := range items {
		t.Run(item.name(), func(t *testing.T) { run(t, item) })
	}
}

func (s Success[F, C]) name() string   { return s.Name }
func (f Failure[F, C]) name() string   { return f.Name }
func (u Unplannable[C]) name() string  { return u.Name }
func (r Ratios[F, C]) name() string    { return r.Name }
func (c Construction[C]) name() string { return c.Name }

// orT2I is req, or a 1:1 text-to-image request when req is empty.
func orT2I(req imagegen.Request) imagegen.Request {
	if req.Prompt == "" {
		return T2I("a fox", imagegen.Aspect1x1)
	}
	return req
}

// checkComplete fails the test when h leaves out what every adapter
// must show.
func (h Harness[F, C, M]) checkComplete(t *testing.T) {
	t.Helper()
	switch {
	case h.Provider == "" || h.Key == "" || h.New == nil || h.NewFake == nil || h.NewModel == nil:
		t.Fatal("the harness needs Provider, Key, New, NewFake and NewModel")
	case len(h.Constructions) == 0:
		t.Fatal("the harness needs Constructions")
	case len(h.TextToImage) == 0 || slices.ContainsFunc(h.TextToImage, func(s Success[F, C]) bool { return s.Size == (provider.Size{}) || s.Plan == (imagegen.Plan{}) }):
		t.Fatal("the harness needs TextToImage, each with its Plan and image Size")
	case len(h.ImageToImage) == 0 && !slices.ContainsFunc(h.Unplannable, func(u Unplannable[C]) bool { return len(u.Request.ImageInput) > 0 }):
		t.Fatal("the harness has no ImageToImage, and no Unplannable image-to-image request to show that the provider takes none")
	case len(h.AspectRatios) == 0 || len(h.RateLimited) == 0 || len(h.ServerErrors) == 0 || len(h.Timeouts) == 0:
		t.Fatal("the harness needs AspectRatios, RateLimited, ServerErrors and Timeouts")
	case len(h.Refusals) == 0 && h.NoContentPolicy == "":
		t.Fatal("the harness needs Refusals, or NoContentPolicy to say why the provider refuses no content")
	case h.SentSeed == nil && slices.ContainsFunc(h.TextToImage, func(s Success[F, C]) bool { return s.Plan.Seeded }):
		t.Fatal("the harness has a Seeded plan and no SentSeed to show that the seed is sent")
	}
}

// seed generates with the largest seed, then without one: the first is
// sent as it is, the second sends none.
func (h Harness[F, C, M]) seed(t *testing.T) {
	f := h.NewFake(t)
	m, _ := h.NewModel(t, f, h.TextToImage[0].Config)
	req := MaxSeedT2I("a lighthouse on a cliff", imagegen.Aspect16x9)
	if _, err := Generate(context.Background(), m, req); err != nil {
		t.Fatalf("Generate with a seed: %v", err)
	}
	if got := h.SentSeed(t, f); got == nil || *got != imagegen.MaxSeed {
		t.Errorf("sent seed %s; want %d", seedString(got), int64(imagegen.MaxSeed))
	}
	req.Seed = nil
	if _, err := Generate(context.Background(), m, req); err != nil {
		t.Fatalf("Generate without a seed: %v", err)
	}
	first := h.SentSeed(t, f)
	if !h.SeedAlways {
		if first != nil {
			t.Errorf("sent seed %d for a request without one; want none", *first)
		}
		return
	}
	if _, err := Generate(context.Background(), m, req); err != nil {
		t.Fatalf("Generate without a seed: %v", err)
	}
	if second := h.SentSeed(t, f); first == nil || second == nil || *first == *second {
		t.Errorf("sent seeds %s and %s for two requests without one; want two random ones", seedString(first), seedString(second))
	}
}

func seedString(seed *int64) string {
	if seed == nil {
		return "none"
	}
	return strconv.FormatInt(*seed, 10)
}

func (h Harness[F, C, M]) succeed(t *testing.T, s Success[F, C]) {
	f := h.NewFake(t)
	m, clock := h.NewModel(t, f, s.Config)
	req := orT2I(s.Request)
	script(t, f, s.Answers, s.AnswersTo, s.Setup)
	if s.Plan != (imagegen.Plan{}) {
		plan, err := m.Plan(req)
		if err != nil || plan != s.Plan {
			t.Errorf("Plan: %+v, %v; want %+v", plan, err, s.Plan)
		}
	}
	imgs, err := Generate(context.Background(), m, req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(imgs) != 1 {
		t.Fatalf("Generate made %d images; want 1", len(imgs))
	}
	if want := cmp.Or(s.ContentType, "image/png"); imgs[0].ContentType != want {
		t.Errorf("the image's type is %q; want %q", imgs[0].ContentType, want)
	}
	if got := SizeOf(t, imgs[0]); s.Size != (provider.Size{}) && got != s.Size {
		t.Errorf("the image is %v; want %v", got, s.Size)
	}
	if h.checkCallsAndWaits(t, f, clock, s.Calls, s.Waits) && s.Check != nil {
		s.Check(t, f)
	}
}

func (h Harness[F, C, M]) refusal(t *testing.T, c Failure[F, C]) {
	h.fail(t, context.Background(), c, c.Config, Outcome{Refused: true, Message: cmp.Or(c.Want.Message, provider.MsgRefused)})
}

func (h Harness[F, C, M]) timeout(t *testing.T, c Failure[F, C]) {
	c.Deadline = cmp.Or(c.Deadline, timeoutDeadline)
	c.Is = cmp.Or(c.Is, error(context.DeadlineExceeded))
	h.fail(t, context.Background(), c, c.Config, Outcome{Retryable: true, Message: provider.MsgTimeout})
}

func (h Harness[F, C, M]) badKey(t *testing.T, c Failure[F, C]) {
	cfg := c.Config
	settings(t, &cfg).APIKey = wrongKey
	err := h.fail(t, context.Background(), c, cfg, Outcome{Misconfigured: true, Message: provider.MsgMisconfigured})
	NoSecretAnywhere(t, wrongKey, err)
}

// giveUp runs c with a clock that cancels the generation's context at
// the adapter's first wait (a poll, most often) and never fires.
func (h Harness[F, C, M]) giveUp(t *testing.T, c Failure[F, C]) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := c.Config
	settings(t, &cfg).Clock = cancelOnWait{cancel}
	c.Is = context.Canceled
	h.fail(t, ctx, c, cfg, Outcome{Retryable: true, Message: cmp.Or(c.Want.Message, provider.MsgUnavailable)})
}

// fail runs c's generation on cfg under ctx, checks its failure against
// want and c, and returns the error.
func (h Harness[F, C, M]) fail(t *testing.T, ctx context.Context, c Failure[F, C], cfg C, want Outcome) error {
	t.Helper()
	f := h.NewFake(t)
	m, clock := h.NewModel(t, f, cfg)
	script(t, f, c.Answers, c.AnswersTo, c.Setup)
	if c.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Deadline)
		defer cancel()
	}
	start := time.Now()
	_, err := Generate(ctx, m, orT2I(c.Request))
	if c.Deadline > 0 && time.Since(start) > c.Deadline+giveUpBound {
		t.Errorf("the adapter gave up %v after a deadline of %v", time.Since(start), c.Deadline)
	}
	me := ModelError(t, err)
	if me.Provider != h.Provider {
		t.Errorf("the error's provider is %q; want %q", me.Provider, h.Provider)
	}
	if got := (Outcome{me.Retryable, me.Refused, me.InvalidInput, me.Misconfigured, me.Message}); got != want {
		t.Errorf("the error %q tells %+v; want %+v", err, got, want)
	}
	if c.Is != nil && !errors.Is(err, c.Is) {
		t.Errorf("the error %q is not %v", err, c.Is)
	}
	for _, cause := range c.Causes {
		if me.Err == nil || !strings.Contains(me.Err.Error(), cause) {
			t.Errorf("the error's cause %v does not say %q", me.Err, cause)
		}
	}
	for _, hidden := range append(c.Hides, h.Key.Reveal()) {
		NoSecretAnywhere(t, hidden, err)
	}
	if h.checkCallsAndWaits(t, f, clock, c.Calls, c.Waits) && c.Check != nil {
		c.Check(t, f)
	}
	return err
}

// checkCallsAndWaits checks the kinds of f's calls and the clock's
// waits, and reports whether the calls were the ones expected (a
// scenario's Check, which reads them, runs only then).
func (h Harness[F, C, M]) checkCallsAndWaits(t *testing.T, f F, clock *InstantClock, calls []string, waits []Wait) bool {
	t.Helper()
	got := f.Kinds()
	callsOK := slices.Equal(got, calls)
	if !callsOK {
		t.Errorf("the fake received %q; want %q", got, calls)
	}
	waited := clock.Waits()
	ok := len(waited) == len(waits)
	for i := 0; ok && i < len(waited); i++ {
		ok = waited[i] >= waits[i].Min && waited[i] <= waits[i].Max
	}
	if !ok {
		t.Errorf("the adapter waited %v; want %v", waited, waits)
	}
	return callsOK
}

func (h Harness[F, C, M]) unplannable(t *testing.T, u Unplannable[C]) {
	f := h.NewFake(t)
	m, _ := h.NewModel(t, f, u.Config)
	_, err := m.Plan(u.Request)
	var ve *imagegen.ValidationError
	if !errors.As(err, &ve) || ve.Field != u.Field || ve.Message != u.Message || !errors.Is(err, imagegen.ErrInvalidParams) {
		t.Errorf("Plan: %v; want a validation error on %s: %s", err, u.Field, u.Message)
	}
	// Even unplanned, the adapter refuses it, and calls no one.
	_, err = m.Generate(context.Background(), imagegen.Generation{Request: u.Request})
	me := ModelError(t, err)
	if got := (Outcome{me.Retryable, me.Refused, me.InvalidInput, me.Misconfigured, me.Message}); got != u.Unplanned {
		t.Errorf("Generate, unplanned: %q tells %+v; want %+v", err, got, u.Unplanned)
	}
	if calls := f.Kinds(); len(calls) != 0 {
		t.Errorf("the fake received %q; want nothing", calls)
	}
}

// ratios checks every row of r, one after the other on one fake.
func (h Harness[F, C, M]) ratios(t *testing.T, r Ratios[F, C]) {
	rows := parseRatios(t, r.Table)
	f := h.NewFake(t)
	m, _ := h.NewModel(t, f, r.Config)
	for _, ratio := range append([]imagegen.AspectRatio{imagegen.AspectAuto}, imagegen.AspectRatios()...) {
		t.Run(string(ratio), func(t *testing.T) {
			w := rows[ratio]
			imgs, err := Generate(context.Background(), m, T2I("a fox", ratio))
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if sent := r.Sent(t, f); sent != w.sent {
				t.Errorf("sent %s; want %s", sent, w.sent)
			}
			got := SizeOf(t, imgs[0])
			exact := ratio
			if ratio == imagegen.AspectAuto {
				exact = imagegen.Aspect1x1 // auto is 1:1 for text-to-image
			}
			if got != w.size || !got.Is(exact) {
				t.Errorf("the image is %v; want %v, exactly %s", got, w.size, exact)
			}
		})
	}
}

// ratioRow is a row of a Ratios table.
type ratioRow struct {
	sent string
	size provider.Size
}

// parseRatios reads a Ratios table, and fails the test unless it has
// one row for each ratio and auto.
func parseRatios(t *testing.T, table string) map[imagegen.AspectRatio]ratioRow {
	t.Helper()
	rows := map[imagegen.AspectRatio]ratioRow{}
	for line := range strings.Lines(table) {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		var row ratioRow
		w, h, ok := strings.Cut(fields[len(fields)-1], "x")
		_, errW := fmt.Sscan(w, &row.size.W)
		_, errH := fmt.Sscan(h, &row.size.H)
		ratio := imagegen.AspectRatio(fields[0])
		if _, dup := rows[ratio]; len(fields) != 3 || !ok || errW != nil || errH != nil || dup {
			t.Fatalf("ratio table row %q: want a new ratio, what is sent, and a size WxH", line)
		}
		row.sent = fields[1]
		rows[ratio] = row
	}
	for _, ratio := range append([]imagegen.AspectRatio{imagegen.AspectAuto}, imagegen.AspectRatios()...) {
		if _, ok := rows[ratio]; !ok {
			t.Fatalf("the ratio table has no row for %s", ratio)
		}
	}
	if len(rows) != len(imagegen.AspectRatios())+1 {
		t.Fatalf("the ratio table has rows for ratios that are not the API's: %v", rows)
	}
	return rows
}

// keyNeverShows checks that the key shows in no way the text-to-image
// config (holding it) or the model made of it may be printed or logged.
func (h Harness[F, C, M]) keyNeverShows(t *testing.T) {
	c := h.TextToImage[0].Config
	settings(t, &c).APIKey = h.Key
	m, _ := h.NewModel(t, h.NewFake(t), c)
	key := h.Key.Reveal()
	NoSecret(t, key, c)
	NoSecret(t, key, &c)
	NoSecretAnywhere(t, key, m)
	if v := reflect.ValueOf(m); v.Kind() == reflect.Pointer && !v.IsNil() {
		NoSecretAnywhere(t, key, v.Elem().Interface())
	}
}

// construct checks that New refuses c, or takes it.
func (h Harness[F, C, M]) construct(t *testing.T, c Construction[C]) {
	if c.Err != "" {
		NewFails(t, h.New, c.Config, c.Err)
		return
	}
	m := MustNew(t, h.New, c.Config)
	if m.Name() != c.Model {
		t.Errorf("New made %s; want %s", m.Name(), c.Model)
	}
	if plan, err := m.Plan(T2I("a fox", imagegen.Aspect1x1)); c.Cost != 0 && (err != nil || plan.Cost != c.Cost) {
		t.Errorf("Plan: %+v, %v; want a cost of %d", plan, err, c.Cost)
	}
}

// script queues answers for f's calls of kind, then runs setup.
func script[F Fake](t *testing.T, f F, answers []Answer, kind string, setup func(*testing.T, F)) {
	if len(answers) > 0 {
		f.Queue(kind, answers...)
	}
	if setup != nil {
		setup(t, f)
	}
}

// settings returns the provider.Config that c, an adapter's config,
// embeds.
func settings[C any](t *testing.T, c *C) *provider.Config {
	t.Helper()
	if v := reflect.ValueOf(c).Elem(); v.Kind() == reflect.Struct {
		for i := range v.NumField() {
			if f := v.Field(i); f.Type() == reflect.TypeFor[provider.Config]() && v.Type().Field(i).IsExported() {
				return f.Addr().Interface().(*provider.Config)
			}
		}
	}
	t.Fatalf("%T holds no provider.Config", *c)
	return nil
}

// cancelOnWait cancels the generation's context when the adapter waits
// on it, and never fires.
type cancelOnWait struct{ cancel context.CancelFunc }

func (cancelOnWait) Now() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func (c cancelOnWait) After(time.Duration) <-chan time.Time {
	c.cancel()
	return make(chan time.Time)
}
