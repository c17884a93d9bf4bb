package imagegen

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/imagegen/imagegen/fetch"
)

// FuzzCallbackURL checks the callback_url rules of Submit (validate,
// then checkCallback) against the webhook sender (fetch.Fetcher.Post,
// whose DNS here answers a public address for every name and whose
// dialer connects nowhere): a URL accepted at submit is https, valid
// UTF-8 (what a store can keep), carries no credentials, names no host the guard refuses whatever DNS answers,
// and is one the sender dials, only ever to an allowed address; a URL
// refused as not public is one the sender refuses without a lookup. Any
// refusal is a ValidationError on callback_url (a 400).
func FuzzCallbackURL(f *testing.F) {
	for _, s := range []string{
		"https://hooks.example.com/imagegen?id=1", "https://8.8.8.8/hook", "https://[2001:4860:4860::8888]/hook",
		"http://hooks.example.com/x", "https://localhost/hook", "https://127.0.0.1/hook", "https://[::ffff:127.0.0.1]/hook",
		"https://0x7f000001/hook", "https://127.1/hook", "https://１２７.０.０.１/hook", "https://[fe80::1%25eth0]/hook",
		"https://[64:ff9b::a9fe:a9fe]/hook", "HTTPS://Hooks.Example:8443/h", "https://u:p@hooks.example/", "https://hooks.example:0/",
		"https://%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1/", "https://hooks.example./", "https://[::1%25lo]:8443/",
		"https://hooks.example/\xff", "HTTPS://0000000008:70000",
	} {
		f.Add(s)
	}
	svc := &Service{} // the production policy: AllowHTTPCallbacks off
	f.Fuzz(func(t *testing.T, raw string) {
		req := Request{Scene: SceneTextToImage, Prompt: "a lighthouse", CallbackURL: raw}
		u, err := req.validate(nil)
		if err == nil {
			err = svc.checkCallback(u)
		}
		var ve *ValidationError
		if err != nil && (!errors.As(err, &ve) || ve.Field != "callback_url" || !errors.Is(err, ErrInvalidParams)) {
			t.Fatalf("callback_url %q: %v, not a ValidationError on callback_url", raw, err)
		}
		if raw == "" {
			return
		}
		dns, dials := &publicDNS{}, &noDial{}
		sender, ferr := fetch.New(fetch.Config{Resolver: dns, Dial: dials.Dial, Timeout: 2 * time.Second})
		if ferr != nil {
			t.Fatal(ferr)
		}
		_, postErr := sender.Post(t.Context(), raw, nil, []byte("{}"))
		for _, addr := range dials.Asked() {
			host, _, serr := net.SplitHostPort(addr)
			a, perr := netip.ParseAddr(host)
			if serr != nil || perr != nil || !fetch.AllowedAddr(a) {
				t.Fatalf("delivering to %q dialled %q", raw, addr)
			}
		}
		switch {
		case err == nil:
			if u.Scheme != "https" || u.User != nil || !utf8.ValidString(raw) {
				t.Fatalf("callback_url %q accepted: scheme %q, credentials %v", raw, u.Scheme, u.User != nil)
			}
			if what, refused := (fetch.Config{}).RefusedHost(u.Hostname()); refused {
				t.Fatalf("callback_url %q accepted, but the guard refuses %s", raw, what)
			}
			if len(dials.Asked()) == 0 {
				t.Fatalf("callback_url %q accepted, but the sender never dialled it: %v", raw, postErr)
			}
		case strings.HasPrefix(ve.Message, "must be a public address"):
			if !errors.Is(postErr, fetch.ErrBlockedAddress) || dns.Calls() != 0 {
				t.Fatalf("callback_url %q refused (%s), but the sender: %v after %d lookups", raw, ve.Message, postErr, dns.Calls())
			}
		}
	})
}

// publicDNS answers every name with one public address.
type publicDNS struct {
	mu    sync.Mutex
	calls int
}

func (r *publicDNS) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	return []net.IPAddr{{IP: net.IPv4(93, 184, 216, 34)}}, nil
}

func (r *publicDNS) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// noDial records the addresses it is asked for and connects to none.
type noDial struct {
	mu    sync.Mutex
	asked []string
}

func (d *noDial) Dial(_ context.Context, _, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked = append(d.asked, addr)
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
}

func (d *noDial) Asked() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.asked...)
}
