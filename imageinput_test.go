package imagegen_test

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/imagegentest"
)

// unfetchable are image_input URLs whose host the fetcher refuses
// whatever DNS answers, with the address (or name) the 422 names.
var unfetchable = []struct{ url, what string }{
	{"http://127.0.0.1/x.png", "127.0.0.1"},
	{"http://[::1]/", "::1"},
	{"http://10.0.0.7/a", "10.0.0.7"},
	{"http://169.254.169.254/latest/meta-data", "169.254.169.254"},
	{"http://0x7f000001/", "127.0.0.1"},
	{"http://2130706433/", "127.0.0.1"},
	{"http://0177.0.0.1/", "127.0.0.1"},
	{"http://127.1:8080/x.png", "127.0.0.1"},
	{"http://127.0.0.1./x.png", "127.0.0.1"},
	{"http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"},
	{"http://[::ffff:a9fe:a9fe]/", "::ffff:169.254.169.254"},
	{"http://[64:ff9b::a00:7]/", "64:ff9b::a00:7"}, // NAT64 of 10.0.0.7
	{"http://[fe80::1%25eth0]/", "fe80::1"},
	{"http://１２７.０.０.１/", "127.0.0.1"}, // what the transport dials
	{"http://localhost/", "localhost"},
	{"http://LOCALHOST./a.png", "localhost"},
	{"http://foo.localhost/", "localhost"},
	{"https://foo.localhost.:8443/", "localhost"},
}

func i2i(urls ...string) imagegen.Request {
	return imagegen.Request{Scene: imagegen.SceneImageToImage, Prompt: "as a watercolour", ImageInput: urls}
}

// A reference URL the fetcher is bound to refuse is refused at submit,
// naming the field and the item, and nothing is charged.
func TestSubmitRefusesImageInputTheFetcherRefuses(t *testing.T) {
	for _, tc := range unfetchable {
		t.Run(tc.url, func(t *testing.T) {
			is := is.New(t)
			f := newFixture(t, imagegentest.NewModel(1))
			f.funded(t, "u", 1)
			_, err := f.svc.Submit(ctx, "u", i2i("https://images.example/ok.png", tc.url))
			is.True(errors.Is(err, imagegen.ErrInvalidParams))
			var v *imagegen.ValidationError
			is.True(errors.As(err, &v))
			is.Equal(v.Field, "image_input")
			is.Equal(v.Message, "item 1 must be a public address (not "+tc.what+")")
			is.Equal(f.balance(t, "u"), int64(1)) // nothing charged
			tasks, err := f.svc.ListTasks(ctx, "u", "", 10, "")
			is.NoErr(err)
			is.Equal(len(tasks.Tasks), 0) // nothing queued

			// The syntax alone is valid: the refusal is the service's,
			// from its fetcher's policy.
			is.NoErr(i2i(tc.url).Validate())
		})
	}
}

// The check follows the fetcher's policy: with AllowPrivate
// (development) every such URL is accepted, and so is a host in
// AllowHosts, given as the fetcher itself or as its Config.
func TestSubmitImageInputFollowsTheFetchersPolicy(t *testing.T) {
	dev, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.New(t).NoErr(err)
	for name, guard := range map[string]imagegen.HostGuard{"fetcher": dev, "config": fetch.Config{AllowPrivate: true}} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) { c.ImageInputGuard = guard })
			f.funded(t, "u", int64(len(unfetchable)))
			for _, tc := range unfetchable {
				_, err := f.svc.Submit(ctx, "u", i2i(tc.url))
				is.New(t).NoErr(err)
			}
		})
	}

	t.Run("AllowHosts", func(t *testing.T) {
		is := is.New(t)
		cdn, err := fetch.New(fetch.Config{AllowHosts: []string{"localhost", "10.0.0.7", "::1"}})
		is.NoErr(err)
		f := newFixture(t, imagegentest.NewModel(1), func(c *imagegen.Config) { c.ImageInputGuard = cdn })
		f.funded(t, "u", 10)
		for _, ok := range []string{"http://localhost:8080/a.png", "http://LOCALHOST./a.png", "http://10.0.0.7/a", "http://[::1]/"} {
			_, err := f.svc.Submit(ctx, "u", i2i(ok))
			is.NoErr(err)
		}
		for _, refused := range []string{"http://127.0.0.1/x.png", "http://foo.localhost/", "http://0xa000007/"} {
			_, err := f.svc.Submit(ctx, "u", i2i(refused))
			is.True(errors.Is(err, imagegen.ErrInvalidParams))
		}
		is.Equal(f.balance(t, "u"), int64(6))
	})
}

// Public literals and names stay accepted: a name is judged on what it
// resolves to, which only the fetcher's connect-time check can see.
func TestSubmitAcceptsPublicAndNamedImageInput(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	f.funded(t, "u", 1)
	_, err := f.svc.Submit(ctx, "u", i2i(
		"http://93.184.216.34/a.png",
		"https://[2606:4700::1111]/b.png",
		"http://0x5db8d822/c.png", // 93.184.216.34
		"https://images.example/d.png",
		"https://127.0.0.1.nip.io/e.png", // a name: refused at fetch, if it resolves to loopback
		"https://localhost.example/f.png",
	))
	is.NoErr(err)
	is.Equal(f.balance(t, "u"), int64(0))
}
