package providertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// What the fuzz targets of the adapters use: a provider's answer is
// untrusted input, and whatever it is, the adapter must give back a
// well-formed outcome, never a panic, a hang or a runaway allocation.

// FuzzFetcher is a fetch.ImageFetcher for fuzz targets: every URL
// answers Data (a PNG when nil). Unlike Fetcher it records nothing, so
// millions of calls do not grow it.
type FuzzFetcher struct{ Data []byte }

// Fetch returns f.Data, or ctx's error.
func (f FuzzFetcher) Fetch(ctx context.Context, _ string) ([]byte, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	if f.Data == nil {
		return fuzzPNG, provider.PNG, nil
	}
	return f.Data, "", nil
}

var fuzzPNG = PNG(4, 3)

// CheckOutcome fails t unless an adapter's outcome is well formed:
// either err is a *imagegen.ModelError of the provider name with a message
// for the user, or imgs holds at least one image and CheckImage accepts
// each.
func CheckOutcome(t testing.TB, name string, imgs []imagegen.GeneratedImage, err error) {
	t.Helper()
	if err != nil {
		CheckError(t, name, err)
		return
	}
	if len(imgs) == 0 {
		t.Fatal("no error and no image")
	}
	for i, img := range imgs {
		CheckImage(t, i, img)
	}
}

// CheckError fails t unless err is a *imagegen.ModelError of the
// provider name, with a message for the user and a cause for the logs.
func CheckError(t testing.TB, name string, err error) {
	t.Helper()
	var me *imagegen.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("error %T %v is not a *imagegen.ModelError", err, err)
	}
	if me.Provider != name || me.Message == "" || me.Err == nil {
		t.Fatalf("ModelError without provider, message or cause: %#v", me)
	}
}

// CheckImage fails t unless image i is not empty, has an image/* type
// that agrees with its bytes when they name one, and, when that type is
// one the standard library reads (PNG, JPEG, GIF), a header that decodes
// to a size of at least 1x1.
func CheckImage(t testing.TB, i int, img imagegen.GeneratedImage) {
	t.Helper()
	if len(img.Data) == 0 {
		t.Fatalf("image %d is empty (type %q)", i, img.ContentType)
	}
	if !strings.HasPrefix(img.ContentType, "image/") {
		t.Fatalf("image %d has type %q", i, img.ContentType)
	}
	sniffed := provider.ContentType(img.Data)
	if sniffed != "" && sniffed != img.ContentType {
		t.Fatalf("image %d has type %q, its bytes are %s", i, img.ContentType, sniffed)
	}
	switch img.ContentType {
	case provider.PNG, provider.JPEG, provider.GIF:
		s, err := provider.ImageSize(img.Data)
		if err != nil || s.W < 1 || s.H < 1 {
			t.Fatalf("image %d (%s) does not decode: %v, %v", i, img.ContentType, s, err)
		}
	}
}

// FuzzStatuses are the failure statuses a fuzz target feeds a
// classifier with each body: a rejection, the operator errors, a rate
// limit and a server error.
var FuzzStatuses = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
	http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable}

// CheckClassify fails t unless classify turns body, answered with every
// one of FuzzStatuses, into a *imagegen.ModelError of the provider name, of
// exactly one kind at most (refused, retryable, invalid input,
// misconfigured).
func CheckClassify(t testing.TB, name string, classify func(provider.Failure) *imagegen.ModelError, body []byte) {
	t.Helper()
	for _, status := range FuzzStatuses {
		e := classify(provider.Failure{Status: status, Header: http.Header{}, Body: body})
		if e == nil {
			t.Fatalf("HTTP %d: no error", status)
		}
		CheckError(t, name, e)
		kinds := 0
		for _, k := range []bool{e.Refused, e.Retryable, e.InvalidInput, e.Misconfigured} {
			if k {
				kinds++
			}
		}
		if kinds > 1 {
			t.Fatalf("HTTP %d: error of more than one kind: %#v", status, e)
		}
	}
}

// AddSeeds adds the JSON wire examples of the package's testdata whose
// names start with one of prefixes to f's seed corpus, each as the
// single []byte argument of the target.
func AddSeeds(f *testing.F, prefixes ...string) {
	f.Helper()
	for _, name := range SeedFiles(f, prefixes...) {
		f.Add(Spec(f, name))
	}
}

// SeedFiles names the JSON wire examples of the package's testdata
// whose names start with one of prefixes.
func SeedFiles(t testing.TB, prefixes ...string) []string {
	t.Helper()
	entries, err := os.ReadDir(TestData)
	if err != nil {
		t.Fatalf("reading the wire examples: %v", err)
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if filepath.Ext(name) != ".json" {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				names = append(names, name)
				break
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("no wire example starts with %v", prefixes)
	}
	return names
}

// FuzzServer is a loopback fake API for the fuzz targets that reach an
// answer's parsing only through HTTP: one server for the whole run,
// answering each input with the handler Serve set for it.
type FuzzServer struct {
	*httptest.Server
	mu sync.Mutex
	h  http.HandlerFunc
}

// NewFuzzServer starts a FuzzServer, closed when f ends.
func NewFuzzServer(f *testing.F) *FuzzServer {
	s := &FuzzServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		h := s.h
		s.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	f.Cleanup(s.Close)
	return s
}

// Serve answers every request with h from now on.
func (s *FuzzServer) Serve(h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h = h
}

// Client is an HTTP client that reaches loopback only: a request to any
// other host (a URL an answer named) fails without being sent, as a
// network error would. It follows no redirects.
func (s *FuzzServer) Client() *http.Client {
	return loopbackOnly(s.Server, func(r *http.Request) error {
		return fmt.Errorf("fuzzing: non-loopback host %s not reached", r.URL.Host)
	})
}

// ProviderConfig is the provider.Config of an adapter under fuzzing:
// a key, the server's URL, its loopback-only Client and an instant
// clock (polls and retries do not wait).
func (s *FuzzServer) ProviderConfig() provider.Config {
	return provider.Config{APIKey: "k", BaseURL: s.URL, HTTPClient: s.Client(), Clock: NewInstantClock()}
}

// FuzzTimeout bounds one generation of a fuzz target; GenerateWithin
// fails an input that takes longer than twice as long.
const FuzzTimeout = 2 * time.Second

// GenerateWithin runs m.Generate(g) with a context of FuzzTimeout and
// fails t when it has not returned in 2*FuzzTimeout: an adapter must
// stop when its context ends, whatever its server answers. Progress
// reported to g must be within [0, 1].
func GenerateWithin(t testing.TB, m imagegen.Model, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), FuzzTimeout)
	defer cancel()
	var bad atomic.Value
	g.Progress = func(f float64) {
		if !(f >= 0 && f <= 1) {
			bad.Store(f)
		}
	}
	type outcome struct {
		imgs []imagegen.GeneratedImage
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		imgs, err := m.Generate(ctx, g)
		done <- outcome{imgs, err}
	}()
	select {
	case o := <-done:
		if f := bad.Load(); f != nil {
			t.Fatalf("progress %v reported", f)
		}
		return o.imgs, o.err
	case <-time.After(2 * FuzzTimeout):
		t.Fatalf("Generate still running %v after its context ended", FuzzTimeout)
		return nil, nil
	}
}
