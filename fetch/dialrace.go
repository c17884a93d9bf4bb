package fetch

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"
)

// fallbackDelay is how long the first address family has to connect
// before the other one is tried beside it: net.Dialer's own default
// (RFC 8305, Happy Eyeballs).
const fallbackDelay = 300 * time.Millisecond

// dialChecked connects to the first of addrs (each already checked by
// the guard) that answers, as net.Dialer does for a name: the addresses
// of the first one's family in order and, when none of them has
// connected within fallbackDelay (or all have failed), the other
// family's beside them. Dialling them one after the other instead held
// a fetch from a host with an IPv6 address that cannot be reached (a
// route that drops, not refuses) until its timeout, its IPv4 address
// never tried.
func (f *Fetcher) dialChecked(ctx context.Context, network, port string, addrs []netip.Addr) (net.Conn, error) {
	primaries, fallbacks := byFamily(addrs)
	if len(fallbacks) == 0 {
		return f.dialInOrder(ctx, network, port, primaries)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		conn net.Conn
		err  error
	}
	results := make(chan result, 2)
	race := func(list []netip.Addr) {
		conn, err := f.dialInOrder(ctx, network, port, list)
		results <- result{conn, err}
	}
	go race(primaries)
	fallback := time.NewTimer(fallbackDelay)
	defer fallback.Stop()
	running, fellBack := 1, false
	startFallback := func() {
		if !fellBack {
			fellBack = true
			running++
			go race(fallbacks)
		}
	}
	var errs []error
	for {
		select {
		case <-fallback.C:
			startFallback()
		case r := <-results:
			running--
			if r.err == nil {
				if running > 0 { // the other, cancelled on return, may have connected too
					go func() {
						if other := <-results; other.conn != nil {
							_ = other.conn.Close()
						}
					}()
				}
				return r.conn, nil
			}
			errs = append(errs, r.err)
			if ctx.Err() == nil {
				startFallback()
			}
			if running == 0 {
				return nil, errors.Join(errs...)
			}
		}
	}
}

// dialInOrder connects to the first of addrs that answers, trying them
// one after the other.
func (f *Fetcher) dialInOrder(ctx context.Context, network, port string, addrs []netip.Addr) (net.Conn, error) {
	var errs []error
	for _, a := range addrs {
		conn, err := f.o.Dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// byFamily splits addrs, in their order, into those of the first one's
// family (IPv4 or IPv6) and the others.
func byFamily(addrs []netip.Addr) (primaries, fallbacks []netip.Addr) {
	for _, a := range addrs {
		if a.Is4() == addrs[0].Is4() {
			primaries = append(primaries, a)
		} else {
			fallbacks = append(fallbacks, a)
		}
	}
	return primaries, fallbacks
}
