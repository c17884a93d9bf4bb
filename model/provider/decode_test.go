package provider_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// A 2xx answer that is not JSON (a proxy's page echoing the request) is
// quoted in the logged cause with the key redacted, even where the quote
// is cut.
func TestDecodeJSONRedactsTheKeyInTheQuotedBody(t *testing.T) {
	is := is.New(t)
	page := strings.Repeat("x", 165) + "<p>Authorization: Bearer " + key + "</p>"
	_, url := serve(t, answer{status: 200, body: page})
	resp, err := provider.Do(context.Background(), http.DefaultClient, get(url), policy(providertest.NewInstantClock(), 0))
	is.NoErr(err)
	var v struct{}
	err = provider.DecodeJSON("acme", resp, &v)
	me := modelError(t, err)
	is.True(me.Retryable) // a cut or foreign answer may be better next time
	is.True(!strings.Contains(err.Error(), key[:8]))
	is.True(strings.Contains(err.Error(), "xxxx"))
}
