package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// An adapter resolves its config, then sends its calls through Do: here
// a fake provider is busy once, asks for 2 seconds, then answers.
func ExampleDo() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "2")
			http.Error(w, `{"error":"busy"}`, http.StatusTooManyRequests)
			return
		}
		fmt.Fprintf(w, `{"auth":%q}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()

	clock := providertest.NewInstantClock() // records waits instead of sleeping
	cfg, err := provider.Config{BaseURL: srv.URL, APIKey: "sk-example", Clock: clock}.
		Resolve(provider.Defaults{Provider: "acme", Cost: 2})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", cfg.APIKey)

	header := http.Header{"Authorization": {"Bearer " + cfg.APIKey.Reveal()}}
	build, _ := provider.PostJSON(cfg.URL("/generate"), map[string]string{"prompt": "a fox"}, header)
	resp, err := provider.Do(context.Background(), cfg.HTTPClient, build, cfg.Policy("acme"))
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Status, string(resp.Body), clock.Waits())

	// A failure is always a *imagegen.ModelError with a safe message.
	var me *imagegen.ModelError
	err = provider.NewError("acme", 401, "Incorrect API key provided", provider.Code("invalid_api_key"))
	if errors.As(err, &me) {
		fmt.Println(me.Retryable, me.UserMessage(), "|", me.Err)
	}
	// Output:
	// [redacted]
	// 200 {"auth":"Bearer sk-example"} [2s]
	// false the image service is misconfigured | HTTP 401 (operator error invalid_api_key): Incorrect API key provided
}
