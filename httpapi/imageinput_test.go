package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/wire"
)

// A reference or callback URL whose host the service's fetcher refuses
// whatever DNS answers is a 422 naming the field and item, with nothing
// charged; a development service (its fetcher with AllowPrivate) takes
// it, and public literals and names are taken either way.
func TestSubmitRefusesUnfetchableURLs(t *testing.T) {
	refused := map[string]string{
		"http://127.0.0.1/x.png":                  "image_input: item 0 must be a public address (not 127.0.0.1)",
		"http://[::1]/":                           "image_input: item 0 must be a public address (not ::1)",
		"http://10.0.0.7/a":                       "image_input: item 0 must be a public address (not 10.0.0.7)",
		"http://169.254.169.254/latest/meta-data": "image_input: item 0 must be a public address (not 169.254.169.254)",
		"http://0x7f000001/":                      "image_input: item 0 must be a public address (not 127.0.0.1)",
		"http://[::ffff:7f00:1]/":                 "image_input: item 0 must be a public address (not ::ffff:127.0.0.1)",
		"http://[fe80::1%25eth0]/":                "image_input: item 0 must be a public address (not fe80::1)",
		"http://localhost/":                       "image_input: item 0 must be a public address (not localhost)",
		"http://foo.localhost./":                  "image_input: item 0 must be a public address (not localhost)",
	}
	i2i := func(url string) string {
		return fmt.Sprintf(`{"scene":"image-to-image","prompt":"as a watercolour","image_input":[%q]}`, url)
	}
	e := newEnv(t)
	for url, want := range refused {
		t.Run(url, func(t *testing.T) {
			msg := wantError(t, e.submit(e.key, i2i(url)), http.StatusUnprocessableEntity, wire.APIInvalidParams)
			is.New(t).Equal(msg, want)
		})
	}
	t.Run("callback_url", func(t *testing.T) {
		body := `{"scene":"text-to-image","prompt":"a fox","callback_url":"https://0x7f000001/hook"}`
		msg := wantError(t, e.submit(e.key, body), http.StatusUnprocessableEntity, wire.APIInvalidParams)
		is.New(t).Equal(msg, "callback_url: must be a public address (not 127.0.0.1)")
	})
	is := is.New(t)
	is.Equal(e.credits(), int64(10)) // nothing charged

	for _, url := range []string{"http://93.184.216.34/a.png", "https://images.example/a.png"} {
		is.Equal(e.submit(e.key, i2i(url)).Code, http.StatusCreated)
	}
	is.Equal(e.credits(), int64(10-2*2)) // the scripted model's price is 2

	dev := newEnv(t, func(o *envOptions) {
		o.service = func(c *imagegen.Config) { c.ImageInputGuard = fetch.Config{AllowPrivate: true} }
	})
	rich := dev.user("dana", int64(2*len(refused)))
	for url := range refused {
		is.Equal(dev.submit(rich, i2i(url)).Code, http.StatusCreated)
	}
}
