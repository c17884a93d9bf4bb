package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/retry"
)

// DefaultWaitTimeout bounds each WAIT for replicas when
// Config.WaitTimeout is zero.
const DefaultWaitTimeout = time.Second

// ErrNotReplicated: the change was made on the master, but fewer than
// Config.WaitReplicas replicas confirmed it within Config.WaitTimeout. It
// may be lost if the master dies before they catch up, or it may
// survive: the caller cannot tell, and must treat the change as unknown
// (a task may exist, a grant may have applied; a grant retried with the
// same reference applies at most once).
var ErrNotReplicated = errors.New("redis store: not confirmed by enough replicas")

// acked runs fn's commands in one pipeline on the master that holds
// routeKey (a Cluster's, found by the key's slot) and, when the store
// waits for replicas, WAIT after them on the same connection (WAIT
// counts the replicas that have every write of the connection): one round trip
// either way. It returns ErrNotReplicated when too few replicas confirm,
// and the pipeline's error when a command failed (each command holds its
// own result too). A Cluster's answer that the slot has moved (a
// failover, a resharding) reloads the slot map and, once it names
// another master (or after awaitOtherMaster's bound), tries once more;
// a broken connection has the map reloaded and tries once more at once.
func (s *Store) acked(ctx context.Context, routeKey string, fn func(p goredis.Pipeliner)) error {
	if s.waitReplicas == 0 {
		_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error { fn(p); return nil })
		return err
	}
	for try := 0; ; try++ {
		node, err := s.masterFor(ctx, routeKey)
		if err != nil {
			return err
		}
		var wait *goredis.Cmd
		_, err = node.Pipelined(ctx, func(p goredis.Pipeliner) error {
			fn(p)
			wait = p.Do(ctx, "WAIT", s.waitReplicas, s.waitTimeout.Milliseconds())
			return nil
		})
		if cc, ok := s.rdb.(*goredis.ClusterClient); ok && try == 0 && (movedErr(err) || networkErr(err)) {
			if movedErr(err) { // the map is stale: wait for the new one
				awaitOtherMaster(ctx, cc, routeKey, node)
			} else {
				cc.ReloadState(ctx) // the slot's master may have changed
			}
			continue
		}
		n, werr := wait.Int64()
		if werr != nil {
			if err == nil {
				err = werr
			}
			return err
		}
		if n < int64(s.waitReplicas) {
			return fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, n, s.waitReplicas, s.waitTimeout)
		}
		return err
	}
}

// slotMapTries bounds the reloads of a Cluster client's slot map that
// awaitOtherMaster waits for (about a second and a half in all).
const slotMapTries = 8

// awaitOtherMaster has cc reload its map of the slots and waits until
// the map names another master than failed for key, at most
// slotMapTries reloads. go-redis reloads the map in the background, so
// a try made at once would go to the node that just failed.
func awaitOtherMaster(ctx context.Context, cc *goredis.ClusterClient, key string, failed goredis.Cmdable) {
	old, ok := failed.(*goredis.Client)
	if !ok {
		return
	}
	pause := retry.Doubling{Min: 10 * time.Millisecond, Max: 400 * time.Millisecond}
	for range slotMapTries {
		cc.ReloadState(ctx)
		t := time.NewTimer(pause.Next())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if n, err := cc.MasterForKey(ctx, key); err == nil && n.Options().Addr != old.Options().Addr {
			return
		}
	}
}

// ackedScript runs script like Script.Run (EVALSHA, then EVAL when the
// server does not know it) through acked; a *sendMark among args is
// told of a NOSCRIPT as runScript tells it.
func (s *Store) ackedScript(ctx context.Context, script *goredis.Script, keys []string, args ...any) *goredis.Cmd {
	if s.waitReplicas == 0 {
		return runScript(ctx, s.rdb, script, keys, args...)
	}
	var cmd *goredis.Cmd
	err := s.acked(ctx, keys[0], func(p goredis.Pipeliner) { cmd = script.EvalSha(ctx, p, keys, args...) })
	if goredis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		noScript(args)
		err = s.acked(ctx, keys[0], func(p goredis.Pipeliner) { cmd = script.Eval(ctx, p, keys, args...) })
	}
	if err != nil && cmd.Err() == nil {
		cmd.SetErr(err) // ErrNotReplicated (or WAIT's own failure)
	}
	return cmd
}

// masterFor is the client of the node that takes writes for key: the
// store's own client, or a Cluster's master of the key's slot.
func (s *Store) masterFor(ctx context.Context, key string) (goredis.Cmdable, error) {
	if cc, ok := s.rdb.(*goredis.ClusterClient); ok {
		return cc.MasterForKey(ctx, key)
	}
	return s.rdb, nil
}

// networkErr reports whether err is not an answer of Redis (a refused or
// broken connection, a timeout).
func networkErr(err error) bool {
	var reply goredis.Error
	return err != nil && !errors.As(err, &reply) && !errors.Is(err, goredis.Nil) && ctxErr(err) == nil
}

// ctxErr is err when it is the context's own end.
func ctxErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// movedErr reports whether a Cluster node said that the slot is
// elsewhere (MOVED, ASK) or that it is no longer a master.
func movedErr(err error) bool {
	return goredis.HasErrorPrefix(err, "MOVED") || goredis.HasErrorPrefix(err, "ASK") ||
		goredis.HasErrorPrefix(err, "READONLY") || goredis.HasErrorPrefix(err, "CLUSTERDOWN")
}
