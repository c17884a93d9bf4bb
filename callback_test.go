package imagegen_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// A callback_url that can never be delivered (not https, or plainly not
// a public address) is refused at submit, and nothing is charged; a
// development server (AllowHTTPCallbacks) takes them all.
func TestSubmitChecksCallbackURL(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://hooks.example.com/imagegen?id=1", true},
		{"HTTPS://hooks.example.com/imagegen", true},
		{"https://8.8.8.8/hook", true},
		{"https://[2001:4860:4860::8888]/hook", true},
		{"https://intranet.example.com/hook", true}, // names are checked at delivery, by the SSRF guard
		{"http://hooks.example.com/imagegen", false},
		{"https://localhost/hook", false},
		{"https://LOCALHOST./hook", false},
		{"https://app.localhost:8443/hook", false},
		{"https://127.0.0.1/hook", false},
		{"https://[::1]:8443/hook", false},
		{"https://[::ffff:127.0.0.1]/hook", false},
		{"https://10.1.2.3/hook", false},
		{"https://192.168.0.10/hook", false},
		{"https://169.254.169.254/latest/meta-data", false},
		{"https://0.0.0.0/hook", false},
		{"https://[fe80::1%25eth0]/hook", false},
		{"https://[fd00::1]/hook", false},
		{"https://224.0.0.1/hook", false},
		{"https://100.64.0.1/hook", false}, // carrier-grade NAT
		{"https://192.0.2.1/hook", false},  // documentation
		// Other spellings of refused addresses, as the SSRF guard reads
		// them (fetch.Config.RefusedHost).
		{"https://0x7f000001/hook", false},
		{"https://127.1/hook", false},
		{"https://127.0.0.1./hook", false},
		{"https://１２７.０.０.１/hook", false},
		{"https://[64:ff9b::a9fe:a9fe]/hook", false}, // NAT64 of the metadata address
		{"https://0x08080808/hook", true},            // 8.8.8.8
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			is := is.New(t)
			req := imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse", CallbackURL: tc.url}

			f := newFixture(t, imagegentest.NewModel(1))
			f.funded(t, "u", 1)
			_, err := f.svc.Submit(ctx, "u", req)
			if tc.ok {
				is.NoErr(err)
			} else {
				is.True(errors.Is(err, imagegen.ErrInvalidParams))
				var v *imagegen.ValidationError
				is.True(errors.As(err, &v))
				is.Equal(v.Field, "callback_url")
				is.True(v.Message == "must be an https URL" || strings.HasPrefix(v.Message, "must be a public address (not "))
				is.Equal(f.balance(t, "u"), int64(1)) // nothing charged
			}

			dev := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) { c.AllowHTTPCallbacks = true })
			dev.funded(t, "u", 1)
			_, err = dev.svc.Submit(ctx, "u", req)
			is.NoErr(err)
		})
	}
}
