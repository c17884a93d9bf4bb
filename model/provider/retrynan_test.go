package provider_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// A Retry-After that is not a number of seconds ("NaN", which
// strconv.ParseFloat reads) is no delay asked: Do backs off as for a
// failure that names none, where it used to take NaN as a negative
// duration and try again at once, with no wait at all.
func TestDoBacksOffOnRetryAfterNaN(t *testing.T) {
	is := is.New(t)
	s, url := serve(t, answer{status: 503, header: map[string]string{"Retry-After": "NaN"}}, answer{status: 429, header: map[string]string{"Retry-After": "nan"}}, ok)
	clock := providertest.NewInstantClock()
	p := policy(clock, 3)
	p.BaseDelay, p.MaxDelay = time.Second, 3*time.Second
	resp, err := provider.Do(context.Background(), http.DefaultClient, get(url), p)
	is.NoErr(err)
	is.Equal(resp.Status, 200)
	is.Equal(s.calls.Load(), int32(3))
	isBackoff(t, clock.Waits(), 2) // a backoff before each retry
	_, asked := provider.RetryAfter(http.Header{"Retry-After": {"NaN"}}, clock.Now())
	is.True(!asked)
}
