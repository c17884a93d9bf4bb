package bfl

import (
	"testing"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// Which polling_url the adapter follows: https on the API's own hosts,
// or the configured base URL's scheme and host; anything else is read
// at the base URL instead.
func TestPollURL(t *testing.T) {
	const id = "8b1e3c5e"
	m, err := New(Config{Config: provider.Config{APIKey: "k", BaseURL: "http://127.0.0.1:8080"}, Fetcher: &providertest.Fetcher{}})
	if err != nil {
		t.Fatal(err)
	}
	own := "http://127.0.0.1:8080/v1/get_result?id=" + id
	for answered, want := range map[string]string{
		"https://api.us1.bfl.ai/v1/get_result?id=" + id:          "https://api.us1.bfl.ai/v1/get_result?id=" + id,
		"https://api.eu.bfl.ai/v1/get_result?id=" + id:           "https://api.eu.bfl.ai/v1/get_result?id=" + id,
		"https://api.bfl.ai/v1/get_result?id=" + id:              "https://api.bfl.ai/v1/get_result?id=" + id,
		"http://127.0.0.1:8080/v1/get_result?id=" + id:           own,
		"http://api.us1.bfl.ai/v1/get_result?id=" + id:           own, // not https
		"https://api.us1.bfl.ai:8443/v1/get_result?id=" + id:     own, // another port
		"https://api.bfl.ai.evil.example/v1/get_result?id=" + id: own,
		"https://api.x.y.bfl.ai/v1/get_result?id=" + id:          own,
		"https://delivery-us1.bfl.ai/v1/get_result?id=" + id:     own, // not an API host
		"https://api.bfl.ai/v1/finetune?id=" + id:                own, // not the result endpoint
		"https://user@api.bfl.ai/v1/get_result?id=" + id:         own,
		"http://127.0.0.1:9999/v1/get_result?id=" + id:           own, // another port of the configured host
		"": own,
	} {
		if got := m.pollURL(&asyncResponse{ID: id, PollingURL: answered}); got != want {
			t.Errorf("polling_url %q: reads %q; want %q", answered, got, want)
		}
	}
}
