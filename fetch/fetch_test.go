package fetch_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/fetch"
)

// pngOf returns a w x h PNG.
func pngOf(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.NRGBA{R: 255, A: 255})
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

// hugeHeader is a PNG whose header claims 100000 x 100000 pixels and
// which has no image data: only DecodeConfig may look at it.
func hugeHeader() []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], 100000)
	binary.BigEndian.PutUint32(ihdr[4:], 100000)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk := append([]byte("IHDR"), ihdr...)
	_ = binary.Write(&b, binary.BigEndian, uint32(13))
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// site is a loopback test server that counts its hits.
type site struct {
	*httptest.Server
	hits atomic.Int64
}

func newSite(t *testing.T, h http.HandlerFunc) *site {
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// resolver maps every name to one address.
type resolver struct{ ip string }

func (r resolver) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return []net.IPAddr{{IP: net.ParseIP(r.ip)}}, nil
}

// toSite is a Dial that sends every connection to the test site and
// records which (checked) address was asked for.
func toSite(s *site, asked *atomic.Value) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		asked.Store(addr)
		return (&net.Dialer{}).DialContext(ctx, network, s.Listener.Addr().String())
	}
}

var ctx = context.Background()

func TestFetchAPublicAddress(t *testing.T) {
	is := is.New(t)
	img := pngOf(30, 20)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(img)
	})
	var asked atomic.Value
	f, err := fetch.New(fetch.Options{Resolver: resolver{"93.184.216.34"}, Dial: toSite(s, &asked)})
	is.NoErr(err)
	data, ct, err := f.Fetch(ctx, "http://images.example/cat.png")
	is.NoErr(err)
	is.Equal(data, img)
	is.Equal(ct, "image/png")
	is.Equal(asked.Load(), "93.184.216.34:80") // connected to the checked address, not a re-resolved one
	decoded, format, err := f.Image(ctx, "http://images.example/cat.png")
	is.NoErr(err)
	is.Equal(format, "png")
	is.Equal(decoded.Bounds().Dx(), 30)
}

func TestSSRFGuardAtConnect(t *testing.T) {
	for _, ip := range []string{"127.0.0.1", "10.1.2.3", "169.254.169.254", "192.168.1.1", "100.64.0.1", "::1", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "0.0.0.0"} {
		t.Run(ip, func(t *testing.T) {
			is := is.New(t)
			s := newSite(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pngOf(1, 1)) })
			var asked atomic.Value
			f, err := fetch.New(fetch.Options{Resolver: resolver{ip}, Dial: toSite(s, &asked)})
			is.NoErr(err)
			_, _, err = f.Fetch(ctx, "http://innocent.example/a.png")
			is.True(errors.Is(err, fetch.ErrBlockedAddress))
			is.Equal(s.hits.Load(), int64(0)) // never connected
			is.Equal(asked.Load(), nil)
		})
	}
}

func TestAllowPrivateAndAllowHosts(t *testing.T) {
	is := is.New(t)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pngOf(2, 2)) })
	f, err := fetch.New(fetch.Options{AllowPrivate: true})
	is.NoErr(err)
	_, _, err = f.Image(ctx, s.URL+"/a.png")
	is.NoErr(err)

	var asked atomic.Value
	f, err = fetch.New(fetch.Options{AllowHosts: []string{"CDN.provider.example"}, Resolver: resolver{"10.0.0.5"}, Dial: toSite(s, &asked)})
	is.NoErr(err)
	_, _, err = f.Fetch(ctx, "http://cdn.provider.example/a.png")
	is.NoErr(err)
	_, _, err = f.Fetch(ctx, "http://other.example/a.png")
	is.True(errors.Is(err, fetch.ErrBlockedAddress))
}

func TestRedirects(t *testing.T) {
	is := is.New(t)
	var s *site
	s = newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/img":
			_, _ = w.Write(pngOf(1, 1))
		case "/ftp":
			http.Redirect(w, r, "ftp://example.com/a.png", http.StatusFound)
		case "/private":
			http.Redirect(w, r, "http://internal.example/img", http.StatusFound)
		default: // /r/N redirects N more times, then to /img
			n := strings.Count(r.URL.Path, "/") - 1
			if n <= 0 {
				http.Redirect(w, r, "/img", http.StatusFound)
				return
			}
			http.Redirect(w, r, strings.TrimSuffix(r.URL.Path, "/x"), http.StatusFound)
		}
	})
	var asked atomic.Value
	dial := toSite(s, &asked)
	f, err := fetch.New(fetch.Options{
		Resolver: resolverFunc(func(host string) string {
			if host == "internal.example" {
				return "10.0.0.1"
			}
			return "93.184.216.34"
		}),
		Dial: dial,
	})
	is.NoErr(err)
	_, _, err = f.Fetch(ctx, "http://a.example/r/x/x") // 3 redirects: allowed
	is.NoErr(err)
	_, _, err = f.Fetch(ctx, "http://a.example/r/x/x/x") // 4: refused
	is.True(errors.Is(err, fetch.ErrTooManyRedirects))
	_, _, err = f.Fetch(ctx, "http://a.example/ftp")
	is.True(errors.Is(err, fetch.ErrBadURL))
	_, _, err = f.Fetch(ctx, "http://a.example/private") // the redirect target is checked at connect too
	is.True(errors.Is(err, fetch.ErrBlockedAddress))
}

type resolverFunc func(host string) string

func (r resolverFunc) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	return []net.IPAddr{{IP: net.ParseIP(r(host))}}, nil
}

func TestLimits(t *testing.T) {
	is := is.New(t)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			_, _ = w.Write(make([]byte, 2000))
		case "/big-chunked":
			w.(http.Flusher).Flush() // no Content-Length
			_, _ = w.Write(make([]byte, 2000))
		case "/huge":
			_, _ = w.Write(hugeHeader())
		case "/text":
			_, _ = w.Write([]byte("<html>not an image</html>"))
		case "/missing":
			http.NotFound(w, r)
		case "/slow":
			<-r.Context().Done() // hangs until the fetcher gives up
		}
	})
	f, err := fetch.New(fetch.Options{AllowPrivate: true, MaxBytes: 1000, Timeout: 200 * time.Millisecond})
	is.NoErr(err)
	_, _, err = f.Fetch(ctx, s.URL+"/big")
	is.True(errors.Is(err, fetch.ErrTooLarge))
	_, _, err = f.Fetch(ctx, s.URL+"/big-chunked")
	is.True(errors.Is(err, fetch.ErrTooLarge))
	_, _, err = f.Image(ctx, s.URL+"/huge")
	is.True(errors.Is(err, fetch.ErrTooManyPixels)) // refused from the header alone
	_, _, err = f.Image(ctx, s.URL+"/text")
	is.True(errors.Is(err, fetch.ErrNotImage))
	_, _, err = f.Fetch(ctx, s.URL+"/missing")
	is.True(errors.Is(err, fetch.ErrStatus))
	is.True(strings.Contains(err.Error(), "404"))
	_, _, err = f.Fetch(ctx, s.URL+"/slow")
	is.True(errors.Is(err, context.DeadlineExceeded))
}

func TestBadURLs(t *testing.T) {
	f, err := fetch.New(fetch.Options{})
	is.New(t).NoErr(err)
	for _, u := range []string{"", "/a.png", "ftp://example.com/a.png", "http://", "https://user:pw@example.com/a.png", "javascript:alert(1)", "file:///etc/passwd"} {
		_, _, err := f.Fetch(ctx, u)
		is.New(t).True(errors.Is(err, fetch.ErrBadURL))
	}
}

func TestAllowedTable(t *testing.T) {
	for ip, want := range map[string]bool{
		"93.184.216.34": true, "8.8.8.8": true, "2606:4700::1111": true,
		"127.0.0.1": false, "127.255.0.9": false, "10.0.0.1": false, "172.16.0.1": false, "172.31.255.255": false,
		"172.32.0.1": true, "192.168.0.1": false, "169.254.169.254": false, "100.64.0.1": false, "100.128.0.1": true,
		"0.0.0.0": false, "255.255.255.255": false, "224.0.0.1": false, "198.18.0.1": false,
		"::": false, "::1": false, "fc00::1": false, "fd12::1": false, "fe80::1": false, "ff02::1": false,
		"::ffff:10.0.0.1": false, "::ffff:8.8.8.8": true, "64:ff9b::a00:1": false,
	} {
		if got := fetch.Allowed(net.ParseIP(ip)); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", ip, got, want)
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	is := is.New(t)
	for _, o := range []fetch.Options{{MaxBytes: -1}, {MaxPixels: -1}, {Timeout: -1}} {
		_, err := fetch.New(o)
		is.True(err != nil)
	}
}
