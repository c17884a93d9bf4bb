package provider_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// dripServers starts n loopback hosts that drip-feed their answers
// (providertest.Drip), like slowloris image hosts.
func dripServers(t *testing.T, n int) []string {
	t.Helper()
	urls := make([]string, n)
	for i := range urls {
		s := httptest.NewServer(http.HandlerFunc(providertest.Drip))
		t.Cleanup(s.Close)
		urls[i] = s.URL + "/ref.png"
	}
	return urls
}

// TestSlowReferencesAreInvalidInput: eight drip-fed references end within
// one fetch timeout (fetched at once, not one after another), and the
// failure is the user's input (not retried), not a provider error.
func TestSlowReferencesAreInvalidInput(t *testing.T) {
	is := is.New(t)
	const timeout = 300 * time.Millisecond
	f, err := fetch.New(fetch.Config{AllowPrivate: true, Timeout: timeout, MinRate: 1, MinRateGrace: time.Minute})
	is.NoErr(err)
	urls := dripServers(t, 8)
	start := time.Now()
	_, err = provider.FetchReferences(context.Background(), "acme", f, urls, provider.PNG)
	took := time.Since(start)
	me := modelError(t, err)
	is.True(me.InvalidInput)
	is.True(!me.Retryable)
	is.True(took < 4*timeout) // one timeout for the set (eight in a row would be 2.4 s)
	t.Logf("eight drip-fed references failed after %v (fetch timeout %v)", took.Round(time.Millisecond), timeout)

	// The minimum rate cuts them off too, well before the timeout.
	f, err = fetch.New(fetch.Config{AllowPrivate: true, Timeout: time.Minute, MinRate: 1 << 10, MinRateGrace: 100 * time.Millisecond})
	is.NoErr(err)
	start = time.Now()
	_, err = provider.FetchReferences(context.Background(), "acme", f, urls, provider.PNG)
	me = modelError(t, err)
	is.True(me.InvalidInput)
	is.True(time.Since(start) < 5*time.Second)

	// A generation stopped meanwhile (shutdown) may run again.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = provider.FetchReferences(ctx, "acme", f, urls, provider.PNG)
	me = modelError(t, err)
	is.True(me.Retryable)
	is.True(!me.InvalidInput)
}
