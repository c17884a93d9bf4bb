package redis

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// sendMark is a call's token, ARGV[6] of claimScript (and
// createScript's last argument, claimHooksScript's ARGV[3];
// putKeyScript's ARGV[8] takes one of no token, for the mark alone):
// written as "f" and the token
// the first time, and as "a" and the token every time after, which
// tells the script that the call was sent again:
// go-redis writes a command's arguments at each send (proto.Writer
// calls MarshalBinary), and sends it again on a connection broken after
// the command was written (a run whose reply was lost) or, on a
// Cluster, to the node a MOVED names. The token is 64 random bits: two
// calls share one by chance far too rarely to matter. A call marked as
// sent again whose first run never ran (a MOVED, a connection broken
// before Redis read it) finds no task of its token, and claims as any
// other: the mark costs a rare call a look at the leases, and a call
// sent once nothing. Each task a create batch makes keeps the batch's
// token (mk): a batch sent again answers as its own only a task of its
// token, never one of the same id that another batch made.
type sendMark struct {
	token  string
	writes atomic.Int32
}

func newSendMark() *sendMark { return &sendMark{token: callToken()} }

// callToken is a random token that names one call of a script, so that
// a run of the same call sent again knows what the first run left.
func callToken() string { return strconv.FormatUint(rand.Uint64(), 36) }

// noScript is told that the EVALSHA that wrote t was answered NOSCRIPT,
// before the EVAL that follows writes it. When the EVALSHA was written
// once, nothing ran, and the EVAL is the call's first run: it is
// written as a first send. When it was written more than once, an
// earlier send may have run and lost its reply (a failover to a node
// that has not loaded the script: the one it ran on is gone), so the
// EVAL stays marked as sent again.
func (t *sendMark) noScript() { t.writes.CompareAndSwap(1, 0) }

// runScript is Script.Run (EVALSHA, then EVAL when the server does not
// know the script) for arguments that may hold a *sendMark, which it
// tells of the NOSCRIPT (noScript) before the EVAL.
func runScript(ctx context.Context, c goredis.Scripter, script *goredis.Script, keys []string, args ...any) *goredis.Cmd {
	cmd := script.EvalSha(ctx, c, keys, args...)
	if goredis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		noScript(args)
		cmd = script.Eval(ctx, c, keys, args...)
	}
	return cmd
}

// noScript tells each *sendMark of args that its EVALSHA was answered
// NOSCRIPT.
func noScript(args []any) {
	for _, a := range args {
		if t, ok := a.(*sendMark); ok {
			t.noScript()
		}
	}
}

// MarshalBinary is the token as this send writes it.
func (t *sendMark) MarshalBinary() ([]byte, error) {
	if t.writes.Add(1) == 1 {
		return []byte("f" + t.token), nil
	}
	return []byte("a" + t.token), nil
}

// String is the token, for logs (fmt does not call MarshalBinary).
func (t *sendMark) String() string { return t.token }
