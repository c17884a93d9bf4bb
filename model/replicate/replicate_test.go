package replicate_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
	"github.com/imagegen/imagegen/model/replicate"
)

var ctx = context.Background()

const (
	kontextPath = "/v1/models/black-forest-labs/flux-kontext-pro/predictions"
	schnellPath = "/v1/models/black-forest-labs/flux-schnell/predictions"
)

// newModel returns an adapter pointed at f, with a recording clock and,
// unless c has one, f as its Fetcher.
func newModel(t *testing.T, f *fake, c replicate.Config) (*replicate.Model, *providertest.InstantClock) {
	t.Helper()
	clock := providertest.Configure(&c.Config, f.baseURL(), key)
	if c.Fetcher == nil {
		c.Fetcher = f
	}
	return providertest.MustNew(t, replicate.New, c), clock
}

func TestOutputAsAList(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.outputs = 2
	m, _ := newModel(t, f, replicate.Config{Model: "black-forest-labs/flux-schnell", Config: provider.Config{Cost: 1}})
	plan, err := m.Plan(providertest.T2I("a fox", imagegen.Aspect9x16))
	is.NoErr(err)
	is.Equal(plan, imagegen.Plan{Model: "replicate/black-forest-labs/flux-schnell", Cost: 1})
	imgs, err := providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect9x16))
	is.NoErr(err)
	is.Equal(len(imgs), 2) // every URL of the list
	c := f.callsOf(opCreate)[0]
	is.Equal(c.path, schnellPath)
	is.Equal(c.input["aspect_ratio"], "9:16")
	id := f.callsOf(opGet)[0].id
	is.Equal(f.Fetched(), []string{"https://replicate.delivery/xezq/" + id + "/out-0.png", "https://replicate.delivery/xezq/" + id + "/out-1.png"})
	for _, img := range imgs {
		is.True(providertest.SizeOf(t, img).Is(imagegen.Aspect9x16))
	}
}

func TestPreferWaitAndCancelAfterFollowTheDeadline(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.script = []string{"succeeded"}
	m, _ := newModel(t, f, replicate.Config{})
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := providertest.Generate(dctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	c := f.callsOf(opCreate)[0]
	n, err := strconv.Atoi(strings.TrimPrefix(c.header.Get("Prefer"), "wait="))
	is.NoErr(err)
	is.True(n >= 23 && n <= 25) // 30 s left, less 5 s of margin
	is.Equal(c.header.Get("Cancel-After"), "30s")

	m, _ = newModel(t, f, replicate.Config{SyncWait: 10 * time.Second})
	_, err = providertest.Generate(dctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(f.callsOf(opCreate)[1].header.Get("Prefer"), "wait=10")

	m, _ = newModel(t, f, replicate.Config{SyncWait: -1})
	_, err = providertest.Generate(ctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	is.NoErr(err)
	is.Equal(f.callsOf(opCreate)[2].header.Get("Prefer"), "")
}

// The caller gives up while a read is under way: the prediction is
// cancelled (the conformance suite's give-up comes between reads).
func TestGiveUpDuringARead(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	f.hangGet = true
	m, _ := newModel(t, f, replicate.Config{})
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		<-f.hanging // a read is under way
		cancel()
	}()
	_, err := providertest.Generate(cctx, m, providertest.T2I("a fox", imagegen.Aspect1x1))
	me := providertest.ModelError(t, err)
	is.True(me.Retryable)
	is.True(errors.Is(err, context.Canceled))
	is.Equal(len(f.callsOf(opCancel)), 1)
}

func TestNew(t *testing.T) {
	f := &providertest.Fetcher{}
	for _, tc := range []struct {
		name string
		c    replicate.Config
		want string
	}{
		{"no key", replicate.Config{Fetcher: f}, "replicate: Config.APIKey is required"},
		{"no fetcher", replicate.Config{Config: provider.Config{APIKey: key}}, "replicate: Config.Fetcher is required"},
		{"bad model", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, Model: "flux"}, "replicate: Config.Model must be an official model as owner/name"},
		{"a version", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, Model: "a/b:0123"}, "replicate: Config.Model must be"},
		{"a path", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, Model: "a/../b"}, "replicate: Config.Model must be"},
		{"bad reference input", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, ReferenceInput: "input image"}, "replicate: Config.ReferenceInput must be an input name"},
		{"bad cost", replicate.Config{Config: provider.Config{APIKey: key, Cost: 4}, Fetcher: f}, "replicate: Config.Cost must be 1 to 3"},
		{"bad output host", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, OutputHosts: []string{"https://x"}}, "replicate: Config.OutputHosts must hold host names"},
		{"sync wait", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, SyncWait: 2 * time.Minute}, "replicate: Config.SyncWait must be at most 1m0s"},
		{"poll interval", replicate.Config{Config: provider.Config{APIKey: key}, Fetcher: f, PollInterval: -time.Second}, "replicate: Config.PollInterval must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) { providertest.NewFails(t, replicate.New, tc.c, tc.want) })
	}
}

// Every fake checks every request against openapi.json and fails its
// test on a violation; this shows that the check rejects requests that
// break the spec.
func TestTheFakeChecksTheSpec(t *testing.T) {
	f := newFake(t)
	for _, tc := range []struct {
		name, path, body, prefer, cancelAfter string
	}{
		{"version on an official model", kontextPath, `{"version":"x","input":{"prompt":"a"}}`, "", ""},
		{"no input", kontextPath, `{"prompt":"a"}`, "", ""},
		{"Prefer past 60", kontextPath, `{"input":{"prompt":"a"}}`, "wait=61", ""},
		{"Prefer malformed", kontextPath, `{"input":{"prompt":"a"}}`, "wait=0", ""},
		{"Cancel-After under 5 s", kontextPath, `{"input":{"prompt":"a"}}`, "", "4s"},
		{"Cancel-After malformed", kontextPath, `{"input":{"prompt":"a"}}`, "", "5 minutes"},
		{"no such path", "/v1/models/a/predictions", `{"input":{}}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptestRequest(f.baseURL()+strings.TrimPrefix(tc.path, "/v1"), tc.body)
			if tc.prefer != "" {
				r.Header.Set("Prefer", tc.prefer)
			}
			if tc.cancelAfter != "" {
				r.Header.Set("Cancel-After", tc.cancelAfter)
			}
			if err := f.spec.check(r, []byte(tc.body)); err == nil {
				t.Errorf("the check let %s through", tc.name)
			}
		})
	}
	ok := httptestRequest(f.baseURL()+"/models/black-forest-labs/flux-kontext-pro/predictions", `{"input":{"prompt":"a"}}`)
	ok.Header.Set("Prefer", "wait=60")
	ok.Header.Set("Cancel-After", "90s")
	if err := f.spec.check(ok, []byte(`{"input":{"prompt":"a"}}`)); err != nil {
		t.Errorf("a good request was refused: %v", err)
	}
}
