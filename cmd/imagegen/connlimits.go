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
// not known) and perAddr from one client address (0: none), not
// counting the trusted proxies. Refusals are logged at warn level, at
// most once every refusedLogEvery, with how many there were.
func limitConns(ln net.Listener, max, perAddr int, trusted []netip.Prefix, log *slog.Logger) net.Listener {
	if max == 0 {
		max = int(float64(openFileLimit()) * defaultConnShare)
	}
	var refused atomic.Int64
	var gate throttle.Gate
	return connlimit.Listen(ln, connlimit.Config{
		Max:     max,
		PerAddr: perAddr,
		Exempt: func(a netip.Addr) bool {
			for _, p := range trusted {
				if p.Contains(a) {
					return true
				}
			}
			return false
		},
		Refused: func(peer netip.Addr) {
			refused.Add(1)
			if gate.Due(refusedLogEvery) {
				log.Warn("connections refused: too many open from one address", "address", peer.String(),
					"refused", refused.Swap(0), "max_conns_per_addr", perAddr)
			}
		},
	})
}
