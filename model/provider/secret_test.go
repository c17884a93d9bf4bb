package provider_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

const key = "sk-test-0123456789abcdef"

func TestSecretNeverPrints(t *testing.T) {
	is := is.New(t)
	s := provider.Secret(key)
	is.Equal(s.Reveal(), key)
	is.Equal(s.String(), "[redacted]")
	is.Equal(s.GoString(), "[redacted]")
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%10s", "%d"} {
		is.Equal(fmt.Sprintf(verb, s), "[redacted]") // every verb
	}
	b, err := json.Marshal(map[string]provider.Secret{"k": s})
	is.NoErr(err)
	is.Equal(string(b), `{"k":"[redacted]"}`)
	providertest.NoSecret(t, key, s)
}

func TestConfigNeverPrintsItsKey(t *testing.T) {
	is := is.New(t)
	c, err := provider.Config{APIKey: key}.Resolve(provider.Defaults{Provider: "acme", BaseURL: "https://api.acme.example/v1", Cost: 2})
	is.NoErr(err)
	providertest.NoSecret(t, key, c)
	providertest.NoSecret(t, key, &c)
	providertest.NoSecretAnywhere(t, key, c.Policy("acme"))
	providertest.NoSecret(t, key, struct{ Inner provider.Config }{c})
}

func TestClientKeepsItsKeyFromAnyPrinting(t *testing.T) {
	is := is.New(t)
	cfg := provider.Config{APIKey: key}
	c, err := provider.NewClient(&cfg, provider.Defaults{Provider: "acme", BaseURL: "https://api.acme.example/v1/", Cost: 2})
	is.NoErr(err)
	is.Equal(cfg, provider.Config{}) // taken over: the caller's copy no longer holds the key
	is.Equal(c.Key().Reveal(), key)
	is.Equal(c.Provider, "acme")
	is.Equal(c.Cost, int64(2))
	is.Equal(c.URL("/x"), "https://api.acme.example/v1/x")
	is.Equal(c.Policy.Provider, "acme")
	is.Equal(c.Policy.Redact("said "+key), "said [redacted]")
	providertest.NoSecretAnywhere(t, key, c)
	providertest.NoSecretAnywhere(t, key, *c)
	_, err = provider.NewClient(&provider.Config{}, provider.Defaults{Provider: "acme", BaseURL: "https://api.acme.example"})
	is.True(err != nil)
}

func TestConfigResolve(t *testing.T) {
	d := provider.Defaults{Provider: "acme", BaseURL: "https://api.acme.example/v1/", Cost: 2}
	t.Run("defaults", func(t *testing.T) {
		is := is.New(t)
		c, err := provider.Config{APIKey: key}.Resolve(d)
		is.NoErr(err)
		is.Equal(c.BaseURL, "https://api.acme.example/v1") // trailing slash trimmed
		is.Equal(c.URL("/images"), "https://api.acme.example/v1/images")
		is.Equal(c.Cost, int64(2))
		is.Equal(c.MaxRetries, provider.DefaultMaxRetries)
		is.True(c.HTTPClient != nil && c.HTTPClient != http.DefaultClient)
		is.True(c.HTTPClient.Timeout > 0)
		is.True(c.Clock != nil)
	})
	t.Run("negative retries mean none", func(t *testing.T) {
		is := is.New(t)
		c, err := provider.Config{APIKey: key, MaxRetries: -1}.Resolve(d)
		is.NoErr(err)
		is.Equal(c.MaxRetries, 0)
	})
	for _, tc := range []struct {
		name  string
		c     provider.Config
		field string
	}{
		{"no key", provider.Config{}, "Config.APIKey"},
		{"key with newline", provider.Config{APIKey: "a\nb"}, "Config.APIKey"},
		{"cost 4", provider.Config{APIKey: key, Cost: 4}, "Config.Cost"},
		{"cost -1", provider.Config{APIKey: key, Cost: -1}, "Config.Cost"},
		{"retries 11", provider.Config{APIKey: key, MaxRetries: 11}, "Config.MaxRetries"},
		{"relative URL", provider.Config{APIKey: key, BaseURL: "/v1"}, "Config.BaseURL"},
		{"ftp URL", provider.Config{APIKey: key, BaseURL: "ftp://x/v1"}, "Config.BaseURL"},
		{"URL with query", provider.Config{APIKey: key, BaseURL: "https://x/v1?key=1"}, "Config.BaseURL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			_, err := tc.c.Resolve(d)
			is.True(err != nil)
			is.True(contains(err.Error(), "acme: "+tc.field)) // names provider and field
		})
	}
}

// A BaseURL refused for the credentials, query or fragment it holds
// (an operator's http://user:password@gpu:7860 for an sdapi server's
// --api-auth, a ?key= of a proxy) is named in the error without them:
// the error is printed at startup, to the operator's logs.
func TestConfigResolveKeepsTheBaseURLsSecretsOutOfItsError(t *testing.T) {
	d := provider.Defaults{Provider: "gpu", Cost: 1, SelfHosted: "the server's address"}
	for _, raw := range []string{
		"http://admin:hunter2-secret@gpu.lan:7860",
		"http://hunter2-secret@gpu.lan:7860",
		"https://gpu.lan/v1?key=hunter2-secret",
		"https://gpu.lan/v1#hunter2-secret",
		"http://admin:hunter2-secret%zz@gpu.lan:7860", // does not parse
		"gpu.lan:hunter2-secret",                      // no scheme
	} {
		t.Run(raw, func(t *testing.T) {
			is := is.New(t)
			_, err := provider.Config{BaseURL: raw}.Resolve(d)
			is.True(err != nil)
			is.True(contains(err.Error(), "gpu: Config.BaseURL")) // names the field
			is.True(!contains(err.Error(), "hunter2"))            // not the secret
		})
	}
}

// A self-hosted server (Defaults.SelfHosted) has no default address: its
// BaseURL is required, and named in the error; its key may be empty.
func TestConfigResolveSelfHosted(t *testing.T) {
	is := is.New(t)
	d := provider.Defaults{Provider: "gpu", Cost: 1, SelfHosted: "the server's address, e.g. http://127.0.0.1:7860"}
	_, err := provider.Config{}.Resolve(d)
	is.True(err != nil)
	is.Equal(err.Error(), "gpu: Config.BaseURL is required (the server's address, e.g. http://127.0.0.1:7860)")
	c, err := provider.Config{BaseURL: "http://10.0.0.5:7860/"}.Resolve(d)
	is.NoErr(err) // no key: a server without auth
	is.Equal(c.BaseURL, "http://10.0.0.5:7860")
	is.True(c.APIKey.IsZero())
	_, err = provider.Config{BaseURL: "http://10.0.0.5:7860"}.Resolve(provider.Defaults{Provider: "acme", Cost: 1})
	is.True(contains(err.Error(), "acme: Config.APIKey is required")) // a hosted API's key is not
}
