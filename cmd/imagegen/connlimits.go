package main

import (
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/imagegen/imagegen/internal/connlimit"
	"github.com/imagegen/imagegen/internal/throttle"
)

// defaultConnShare is the share of the open-file limit that -max-conns 0
// lets HTTP connections take: the rest stays for the store's and the
// image store's connections, the log and the process's files.
const defaultConnShare = 0.75

// refusedLogEvery bounds the warnings about refused connections.
const refusedLogEvery = 10 * time.Second

// limitConns wraps ln with serve's bounds on open connections: max in
// all (0: defaultConnShare of the open-file limit, or none when it is
// not known) and perAddr from one public client address (0: none; see
// unbounded). Refusals are logged at warn level, at most once every
// refusedLogEvery, with how many there were since the last line.
func limitConns(ln net.Listener, max, perAddr int, trusted []netip.Prefix, log *slog.Logger) net.Listener {
	if max == 0 {
		max = int(float64(openFileLimit()) * defaultConnShare)
	}
	var refused atomic.Int64
	var gate throttle.Gate
	return connlimit.Listen(ln, connlimit.Config{
		Max:     max,
		PerAddr: perAddr,
		Exempt:  func(a netip.Addr) bool { return unbounded(a, trusted) },
		Refused: func(peer netip.Addr) {
			refused.Add(1)
			if gate.Due(refusedLogEvery) {
				log.Warn("connections refused: too many open from one address", "address", peer.String(),
					"refused", refused.Swap(0), "max_conns_per_addr", perAddr)
			}
		},
	})
}

// unbounded reports whether the connections of peer a are exempt from
// -max-conns-per-addr: a -trusted-proxy address, or a loopback, private
// (10/8, 172.16/12, 192.168/16, fc00::/7) or link-local one, where the
// reverse proxy in front of serve (serve has no TLS of its own) usually
// is, and whose one address carries every client's connections. The
// bound is for clients that reach serve from the internet.
func unbounded(a netip.Addr, trusted []netip.Prefix) bool {
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() {
		return true
	}
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
