package comfyui_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// deadlines records, for each request sent through it, how long its
// context had left (0: no deadline).
type deadlines struct {
	next http.RoundTripper
	mu   sync.Mutex
	left map[string]time.Duration // by path
}

func (d *deadlines) RoundTrip(r *http.Request) (*http.Response, error) {
	var left time.Duration
	if at, ok := r.Context().Deadline(); ok {
		left = time.Until(at)
	}
	d.mu.Lock()
	d.left[r.URL.Path] = left
	d.mu.Unlock()
	return d.next.RoundTrip(r)
}

// A caller without a deadline is bounded by Config.MaxDuration: the
// calls of its Generate carry it, so a prompt that never ends is
// stopped at that bound as at any deadline, not followed for ever.
func TestMaxDurationBoundsACallerWithoutADeadline(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	client := *providertest.LoopbackClient(t, f.Server)
	d := &deadlines{next: client.Transport, left: map[string]time.Duration{}}
	client.Transport = d
	m, _ := newModel(t, f, comfyui.Config{Config: provider.Config{HTTPClient: &client, MaxDuration: time.Hour}})
	_, err := generate(t, m, providertest.T2I("a fox", imagegen.Aspect1x1), nil) // t.Context(): no deadline
	is.NoErr(err)
	d.mu.Lock()
	defer d.mu.Unlock()
	left := d.left["/prompt"]
	is.True(left > 0)          // POST /prompt was bounded
	is.True(left <= time.Hour) // by MaxDuration
}
