package fetch_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pngOf returns a w x h PNG.
func pngOf(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.NRGBA{R: 255, A: 255})
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

// pngHeader returns the start of a PNG whose header declares w x h
// pixels and which holds no image data: DecodeConfig can read it, a full
// decode cannot.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := []byte("IHDR")
	chunk = binary.BigEndian.AppendUint32(chunk, w)
	chunk = binary.BigEndian.AppendUint32(chunk, h)
	chunk = append(chunk, 8, 6, 0, 0, 0) // 8-bit RGBA, no interlace
	b.Write(binary.BigEndian.AppendUint32(nil, 13))
	b.Write(chunk)
	b.Write(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(chunk)))
	return b.Bytes()
}

// site is a loopback test server that counts its hits.
type site struct {
	*httptest.Server
	hits atomic.Int64
}

func newSite(t *testing.T, h http.HandlerFunc) *site {
	t.Helper()
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// names is a Resolver from host names to one or more addresses; an
// unknown name fails the test (nothing may reach a real resolver).
type names struct {
	t     *testing.T
	hosts map[string][]string
	calls atomic.Int64
}

func resolver(t *testing.T, hosts map[string][]string) *names {
	return &names{t: t, hosts: hosts}
}

func (n *names) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	n.calls.Add(1)
	ips, ok := n.hosts[host]
	if !ok {
		n.t.Errorf("unexpected lookup of %q", host)
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, len(ips))
	for i, ip := range ips {
		out[i] = net.IPAddr{IP: net.ParseIP(ip)}
	}
	return out, nil
}

// dialer is a Dial that sends every connection to a loopback test site
// and records the (checked) addresses it was asked for.
type dialer struct {
	mu    sync.Mutex
	asked []string
	to    string
}

func dialTo(s *site) *dialer { return &dialer{to: s.Listener.Addr().String()} }

func (d *dialer) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.asked = append(d.asked, addr)
	d.mu.Unlock()
	return (&net.Dialer{}).DialContext(ctx, network, d.to)
}

func (d *dialer) Asked() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.asked...)
}

// dripSite is a loopback server that answers 200 at once and then sends
// one byte every interval, for at most a few seconds, like a slowloris
// image host.
func dripSite(t *testing.T, interval time.Duration) *site {
	t.Helper()
	return newSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		for range 200 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(interval):
			}
			if _, err := w.Write([]byte{0}); err != nil {
				return
			}
			_ = rc.Flush()
		}
	})
}
