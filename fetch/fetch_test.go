package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/fetch"
)

// A public name is fetched without AllowPrivate: the guard checks the
// resolved public address and the connection goes to that address (the
// test's Dial then carries it to the loopback site).
func TestFetchPublicAddress(t *testing.T) {
	is := is.New(t)
	img := pngOf(30, 20)
	var agent atomic.Value
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		agent.Store(r.Header.Get("User-Agent"))
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(img)
	})
	d := dialTo(s)
	f, err := fetch.New(fetch.Config{Resolver: resolver(t, map[string][]string{"images.example": {"93.184.216.34"}}), Dial: d.Dial})
	is.NoErr(err)
	data, ct, err := f.Fetch(t.Context(), "http://images.example/cat.png")
	is.NoErr(err)
	is.Equal(data, img)
	is.Equal(ct, "image/png")
	is.Equal(agent.Load(), "imagegen-fetch/1")
	decoded, format, err := f.Image(t.Context(), "http://images.example/cat.png")
	is.NoErr(err)
	is.Equal(format, "png")
	is.Equal(decoded.Bounds().Size().X, 30)
	is.Equal(decoded.Bounds().Size().Y, 20)
	for _, a := range d.Asked() {
		is.Equal(a, "93.184.216.34:80") // the checked address, never a re-resolved name
	}
	is.True(len(d.Asked()) >= 1)
}

func TestRedirects(t *testing.T) {
	// /hops/N redirects to /hops/N-1; /hops/0 is the image.
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/hops/0":
			_, _ = w.Write(pngOf(1, 1))
		case strings.HasPrefix(r.URL.Path, "/hops/"):
			n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hops/"))
			http.Redirect(w, r, fmt.Sprintf("/hops/%d", n-1), http.StatusFound)
		case r.URL.Path == "/to-ftp":
			http.Redirect(w, r, "ftp://images.example/a.png", http.StatusFound)
		case r.URL.Path == "/to-internal":
			http.Redirect(w, r, "http://internal.example/hops/0", http.StatusFound)
		case r.URL.Path == "/to-userinfo":
			http.Redirect(w, r, "http://user:pw@images.example/hops/0", http.StatusFound)
		}
	})
	setup := func(t *testing.T) (*fetch.Fetcher, *dialer) {
		d := dialTo(s)
		f, err := fetch.New(fetch.Config{
			Resolver: resolver(t, map[string][]string{"images.example": {"93.184.216.34"}, "internal.example": {"10.0.0.1"}}),
			Dial:     d.Dial,
		})
		is.New(t).NoErr(err)
		return f, d
	}
	for _, tc := range []struct {
		name, path string
		want       error // nil: fetched
	}{
		{"3 allowed", "/hops/3", nil},
		{"4th refused", "/hops/4", fetch.ErrTooManyRedirects},
		{"to ftp refused", "/to-ftp", fetch.ErrBadURL},
		{"to credentials refused", "/to-userinfo", fetch.ErrBadURL},
		{"to blocked address refused at connect", "/to-internal", fetch.ErrBlockedAddress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f, d := setup(t)
			_, _, err := f.Fetch(t.Context(), "http://images.example"+tc.path)
			if tc.want == nil {
				is.NoErr(err)
			} else {
				is.True(errors.Is(err, tc.want))
			}
			for _, a := range d.Asked() {
				is.Equal(a, "93.184.216.34:80") // 10.0.0.1 is never dialled
			}
		})
	}
	t.Run("MaxRedirects 1", func(t *testing.T) {
		is := is.New(t)
		d := dialTo(s)
		f, err := fetch.New(fetch.Config{MaxRedirects: 1, Resolver: resolver(t, map[string][]string{"images.example": {"93.184.216.34"}}), Dial: d.Dial})
		is.NoErr(err)
		_, _, err = f.Fetch(t.Context(), "http://images.example/hops/1")
		is.NoErr(err)
		_, _, err = f.Fetch(t.Context(), "http://images.example/hops/2")
		is.True(errors.Is(err, fetch.ErrTooManyRedirects))
	})
}

func TestByteLimit(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/exact":
			_, _ = w.Write(make([]byte, 1000))
		case "/declared": // claims a large body, then stalls: only the header can refuse it in time
			w.Header().Set("Content-Length", "1000000")
			_, _ = w.Write(make([]byte, 10))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case "/endless": // no Content-Length, never ends: only a capped read stops it
			w.(http.Flusher).Flush()
			chunk := make([]byte, 4096)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	})
	f, err := fetch.New(fetch.Config{AllowPrivate: true, MaxBytes: 1000, Timeout: 10 * time.Second})
	is.New(t).NoErr(err)
	t.Run("at the limit", func(t *testing.T) {
		data, _, err := f.Fetch(t.Context(), s.URL+"/exact")
		is.New(t).NoErr(err)
		is.New(t).Equal(len(data), 1000)
	})
	for _, path := range []string{"/declared", "/endless"} {
		t.Run(path, func(t *testing.T) {
			_, _, err := f.Fetch(t.Context(), s.URL+path)
			is.New(t).True(errors.Is(err, fetch.ErrTooLarge))
		})
	}
}

func TestPixelLimit(t *testing.T) {
	is := is.New(t)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/huge":
			_, _ = w.Write(pngHeader(10000, 10000))
		case "/small":
			_, _ = w.Write(pngOf(30, 20))
		}
	})
	f, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.NoErr(err)
	_, _, err = f.Image(t.Context(), s.URL+"/huge")
	is.True(errors.Is(err, fetch.ErrTooManyPixels)) // refused on the header: a decode would fail with ErrNotImage

	f, err = fetch.New(fetch.Config{AllowPrivate: true, MaxPixels: 599})
	is.NoErr(err)
	_, _, err = f.Image(t.Context(), s.URL+"/small")
	is.True(errors.Is(err, fetch.ErrTooManyPixels))
	f, err = fetch.New(fetch.Config{AllowPrivate: true, MaxPixels: 600})
	is.NoErr(err)
	_, _, err = f.Image(t.Context(), s.URL+"/small")
	is.NoErr(err)
}

func TestNotImageAndStatus(t *testing.T) {
	is := is.New(t)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/text":
			_, _ = w.Write([]byte("<html>not an image</html>"))
		case "/truncated":
			_, _ = w.Write(pngOf(30, 20)[:60])
		default:
			http.NotFound(w, r)
		}
	})
	f, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.NoErr(err)
	_, _, err = f.Image(t.Context(), s.URL+"/text")
	is.True(errors.Is(err, fetch.ErrNotImage))
	_, _, err = f.Image(t.Context(), s.URL+"/truncated")
	is.True(errors.Is(err, fetch.ErrNotImage))

	_, _, err = f.Fetch(t.Context(), s.URL+"/missing")
	is.True(errors.Is(err, fetch.ErrStatus))
	var se *fetch.StatusError
	is.True(errors.As(err, &se))
	is.Equal(se.Code, 404)
	is.Equal(err.Error(), "unexpected HTTP status 404")
}

func TestTimeoutAndCancel(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cancel" {
			cancel() // the caller gives up while the request is in flight
		}
		<-r.Context().Done() // hangs until the fetcher stops
	})
	f, err := fetch.New(fetch.Config{AllowPrivate: true, Timeout: 50 * time.Millisecond})
	is.NoErr(err)
	_, _, err = f.Fetch(t.Context(), s.URL+"/slow")
	is.True(errors.Is(err, context.DeadlineExceeded)) // the fetcher's own timeout

	f, err = fetch.New(fetch.Config{AllowPrivate: true, Timeout: time.Minute})
	is.NoErr(err)
	_, _, err = f.Fetch(ctx, s.URL+"/cancel")
	is.True(errors.Is(err, context.Canceled))
}

// Connection failures say what went wrong without naming our internals
// (here the resolver's address).
func TestDownloadErrorsAreSafe(t *testing.T) {
	is := is.New(t)
	f, err := fetch.New(fetch.Config{Resolver: failing{}})
	is.NoErr(err)
	_, _, err = f.Fetch(t.Context(), "http://nowhere.example/a.png")
	is.True(err != nil)
	is.Equal(err.Error(), "could not be downloaded: host not found")
	var dnsErr *net.DNSError
	is.True(errors.As(err, &dnsErr)) // the cause stays available for logs

	// A port nothing listens on: connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	addr := l.Addr().String()
	is.NoErr(l.Close())
	dev, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.NoErr(err)
	_, _, err = dev.Fetch(t.Context(), "http://"+addr+"/a.png")
	is.Equal(err.Error(), "could not be downloaded: connection refused")
}

type failing struct{}

func (failing) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.9.8.7:53", IsNotFound: true}
}

func TestBadURLs(t *testing.T) {
	names := resolver(t, nil) // any lookup fails the test
	d := &dialer{to: "127.0.0.1:1"}
	f, err := fetch.New(fetch.Config{Resolver: names, Dial: d.Dial})
	is.New(t).NoErr(err)
	for _, u := range []string{
		"", "/a.png", "images.example/a.png", "//images.example/a.png",
		"ftp://images.example/a.png", "file:///etc/passwd", "javascript:alert(1)", "data:image/png;base64,AAAA",
		"http://", "http:///a.png", "http://:80/a.png", "http:images.example",
		"https://user:pw@images.example/a.png", "https://user@images.example/a.png",
		"http://[::1", "http://images.example/%zz",
	} {
		t.Run(u, func(t *testing.T) {
			_, _, err := f.Fetch(t.Context(), u)
			is.New(t).True(errors.Is(err, fetch.ErrBadURL))
		})
	}
	is.New(t).Equal(names.calls.Load(), int64(0))
	is.New(t).Equal(len(d.Asked()), 0)
}

func TestOptionsValidation(t *testing.T) {
	for field, o := range map[string]fetch.Config{
		"MaxBytes":        {MaxBytes: -1},
		"MaxDecodedBytes": {MaxDecodedBytes: -1},
		"MaxPixels":       {MaxPixels: -1},
		"Timeout":         {Timeout: -time.Second},
		"MinRate":         {MinRate: -1},
		"MinRateGrace":    {MinRateGrace: -time.Second},
		"MaxRedirects":    {MaxRedirects: -1},
	} {
		t.Run(field, func(t *testing.T) {
			_, err := fetch.New(o)
			is.New(t).True(err != nil)
			is.New(t).True(strings.Contains(err.Error(), "Config."+field+" must not be negative"))
		})
	}
}

func TestPostFollowsNoRedirect(t *testing.T) {
	is := is.New(t)
	var got atomic.Value
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Method + " " + r.Header.Get("X-Sig"))
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	dev, err := fetch.New(fetch.Config{AllowPrivate: true})
	is.NoErr(err)
	status, err := dev.Post(t.Context(), s.URL+"/hook", http.Header{"X-Sig": {"v1"}}, []byte("{}"))
	is.NoErr(err)
	is.Equal(status, http.StatusFound)
	is.Equal(got.Load(), "POST v1")
	is.Equal(s.hits.Load(), int64(1))
	status, answer, err := dev.PostAnswer(t.Context(), s.URL+"/hook", nil, nil) // with the answer's headers
	is.NoErr(err)
	is.Equal(status, http.StatusFound)
	is.Equal(answer.Get("Location"), "/elsewhere")
	is.Equal(s.hits.Load(), int64(2))

	guarded, err := fetch.New(fetch.Config{})
	is.NoErr(err)
	_, err = guarded.Post(t.Context(), s.URL+"/hook", nil, nil)
	is.True(errors.Is(err, fetch.ErrBlockedAddress))
	is.Equal(s.hits.Load(), int64(2))
}
