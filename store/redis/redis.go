// Package redis is an imagegen.Store on Redis, so that any number of API
// processes and workers share tasks, the work queue, credits, API keys
// and images.
//
// Every change of state is one Lua script, declared beside the Go method
// that runs it with a comment listing its KEYS and ARGV; each script gets
// every key it touches in KEYS, and every key of a script shares one hash
// tag, so every script runs in one slot of a Redis Cluster.
//
// # Sharding
//
// On a single node (or Sentinel) all keys share one tag, "{prefix}". On
// a Cluster client the store is spread over Config.Shards shards (16 by
// default), each under a tag of its own, "{prefix:i.salt}", whose slots
// are spread evenly over the slot space (so 16 shards on 3 masters put
// 6, 5 and 5 on each). An owner lives in one shard, chosen by its
// imagegen.OwnerMark: its balance, ledger, references, idempotency
// records, task index, scheduler state, and its tasks and images (and,
// with the default blob/redis, their bytes). Task and image ids made by
// imagegen.NewOwnedID carry the owner's mark, so a lookup by id alone
// (a worker's success, an image download, an operator's TaskByID) finds
// the shard without a lookup; CreateTask on a sharded store refuses ids
// without it. Each shard has its own queue: pending and fair-share
// queues, leases and callback deliveries; workers claim going round the
// shards, from a shard further on at each claim, so fair share, the
// order of claims and a model's concurrency cap and rate hold within
// each shard (an owner's cap is exact: an owner is in one shard).
// Finish notifications go on each shard's channel with SPUBLISH, and a
// process SSUBSCRIBEs to the shards of the tasks it watches. What stays
// under the global tag "{prefix}" is small and looked up before any
// owner is known: the shared secrets, provider statistics, API key
// records (found by the key's hash on every request; each owner's list
// of its keys is in its shard) and console sessions (found by their
// token).
//
// Changing Shards moves owners between shards: it is fixed while the
// store holds data, and every process of a store must use the same
// value. The store records it under the global tag (P:layout, field
// shards), and CheckLayout checks it: the first check of a prefix
// records the process's Shards (HSETNX), and every later one compares,
// returning an error that wraps ErrLayoutMismatch when the numbers
// differ. Ping checks the layout until a check has succeeded, so a
// process of the wrong number of shards fails its readiness probe
// instead of reading and writing owners in the wrong shards (empty
// balances, lost tasks, credits spent twice); imagegen serve and the
// other commands check it at startup. New does no I/O: a process that
// calls neither Ping nor CheckLayout is not checked. A store that holds
// data from before the record existed has none, and the first process
// to check it records its own Shards: the first process started after
// the upgrade fixes the layout, so a rolling upgrade must not also
// change Shards.
//
// A single-node store keeps working unchanged (one shard is exactly the
// old layout); moving it onto a Cluster is a copy into the sharded
// layout (MigrateToShards), which records the destination's number of
// shards once the copy is done.
//
// Round trips: concurrent submits share one run of the create script,
// and concurrent successes one run of the complete script (group commit:
// the calls that arrive while earlier runs are in flight make the next
// one, each still checked on its own); concurrent API-key reads share a
// pipeline. With the default blob/redis, the store is an
// imagegen.BytesCompleter: a success's image bytes go in the same round
// trip as its records (their SETs first, then the script, which records
// the success only when every one of its bytes keys exists, and deletes
// them when it does not record it). A claim takes up to ClaimParams.N
// tasks in one script run.
//
// Runs sent again: go-redis sends a command again when its connection
// breaks after the command was written (and a Cluster client to the
// node a MOVED names; acked tries once more too), so a script whose
// reply was lost runs twice. The scripts that move credits or tasks a
// client sees answer the second run as the first: a submit sent again (marked so, as a claim
// is below) finds its own task (one that holds the batch's token, mk)
// and answers it as made, charged once; a
// success finds itself recorded with its image ids; a cancel or a
// worker's failure finds the task failed by its own call (each leaves
// its random token on the task) and answers with what it refunded; a grant or web entry
// finds its reference used by its own entry (each keeps its call's
// random token, op) among the owner's last 1024, and answers applied.
// A claim call
// carries a random token, which each task it claims keeps (field ct),
// and which go-redis writes marked as sent again at every send after
// the first: a run so marked answers with the tasks of the token still
// processing, if the first run claimed any, and claims no more. Only a
// marked run looks for them, so a claim sent once reads nothing more.
// A claim whose error leaves unknown whether it ran once go-redis has
// given up (a connection's, not Redis's answer) is sent again by the
// store, the same call, a bounded number of times (claimShard).
// An idempotent request's begin keeps its call's token in the record
// (tok), and a run sent again that finds its own record in flight goes
// on; a worker's retry or release leaves its token on the task (cx, as a
// failure does), and a run sent again that finds it answers done. A new API key's run
// sent again (marked, as a submit's) that finds the record of this very
// key (its random id and owner) answers it stored. An operator's
// requeue leaves its token on the task (rx, a field of its own, which
// the task's later endings do not write over), and a run sent again
// that finds it answers done, recharged once, whatever the task did
// since. A key deletion leaves its token under the key's
// hash for a few minutes (P:delkey), and a run sent again that finds the
// record gone and that token answers deleted. A webhook claim carries
// a random token, marked as a claim's is, and a run that leases
// deliveries records them under it for the lease (P:hookclaim): a run
// so marked that finds the record answers with those deliveries still
// leased, under the same claimed IDs, and leases no more. Not so, yet,
// for the rest, which answer what they find: a webhook retry sent again
// counts its attempt twice (the delivery gives up one attempt early),
// and a recovery's counts of a lost reply are not reported.
//
// Time: scripts read "now" from the Redis server (TIME), so processes
// with skewed clocks still agree on leases. Config.Clock replaces it with
// a clock passed in ARGV, for tests that move time by hand.
//
// Retention: a finished task and its image records expire after
// Config.Retention (Redis TTLs). Image bytes are in Config.Blobs; the
// default (blob/redis, on the same client and prefix) gives each blob a
// TTL of Retention plus BlobTTLMargin, and imagegen.Service.SweepBlobs
// deletes bytes whose record is gone from any BlobStore. The credit ledger is kept whole;
// grant and web-charge references are kept for ever, so an idempotent
// grant cannot apply twice however late it is retried.
//
// A limit of the listings (not of the tasks): an owner's index
// (P:tasks:<owner>, ListTasks) lasts Retention+24h past the owner's
// last submit, and a task that ends more than a day after it was made
// puts itself back in it and makes it last its retention (keep_listed),
// so ListTasks lists every finished task while it is kept; but a task still
// pending or running after its owner's index expired (a model paused
// for days, with no submit of its owner meanwhile) is not listed until
// it ends. The operators' listing (P:all) is trimmed of tasks made more
// than Retention+24h ago, finished or not. Each task is still read by
// id, claimed, finished, refunded and sent to its callback as any
// other. The memory and PostgreSQL stores list a task as long as it
// exists.
//
// Keys written by something other than the store: an owner whose
// balance, ledger, task index or scheduling state holds a value of
// another kind has its submits refused (nothing charged or kept), and
// the other owners of its batch are not touched. Its tasks queued
// before are still claimed, given back and cancelled: its scheduling
// state only orders them, and a number there that is not one (or not a
// finite one: "nan", "inf") reads as none and is written over. Its
// running sets and a model's hash of another kind read as none too (the
// claim and the scripts that give slots back use pcalls). A refund its
// balance or ledger cannot take (a failure, a cancel, a recovery that
// fails the task) writes nothing: the failure or cancel answers an
// error, and recovery leaves the task processing and tries it again a
// minute later, after the other leases. A store-wide queue (pending,
// fair:models, all, or a model's fair queue: then the batches with a
// task of that model) of another kind fails every submit, charging and
// keeping nothing, until it is mended (claims read such a fair queue as
// empty). What gives a task back to such a queue (pending, fair:models,
// or its model's fair queue) fails too, and changes nothing: a retry or
// release answers an error and the task stays processing with its
// lease (recovery requeues it once the key is mended); an operator's
// requeue answers an error and the task stays failed, nothing charged;
// recovery leaves the task processing, its lease end a minute later,
// recovers the other leases, and answers an error that counts the tasks
// it left. vtag and vtime of another kind read
// as none, and the next claim writes them over; tseq of another kind
// (or not a number) fails every submit, and counts as 0 for a task
// given back.
//
// Layout (P is the hash-tagged prefix, "{imagegen}" by default; on a
// sharded store, the owner's or the id's shard tag for every key but
// the global ones, layout, secret, pstats, apikey, delkey and session(s)):
//
//	P:task:<id>        hash: the task
//	P:pending          zset: pending task ids by run-after time (ms) (queue stats)
//	P:fair:m:<model>   zset: the model's pending task ids by fair-share tag; the claim merges the
//	                   models' queues (and fair) in score order, the claim order; the score is
//	                   tag * 1024 + the queueing count mod 1024, which breaks ties in queueing order
//	                   (before 2026-11-27 it was tag + count/1024: see tag_score)
//	P:fair:models      set: the models that have a queue (fair:m:<model>), noted by the submits and
//	                   requeues, dropped by the claim or cancel that empties the queue (see fair_queues)
//	P:fair:p:<len(model)>:<model>:<owner>
//	                   zset: the owner's parked tasks of the model (scored as in fair:m:<model>): moved
//	                   there by a claim that found the owner at its cap, merged by the claims that find
//	                   it with a free slot (see fair_queues)
//	P:fair:pa:<model>  zset: every parked task of the model, as in the owners' parked queues (positions)
//	P:fair:pk:<model>  zset: the model's parked owners by when a claim last looked at them (ms)
//	P:fair:parked      set: the models that have parked owners
//	P:fair:d:<model>   zset: the model's retries waiting out their delay, moved out of its queue by a
//	                   claim that met them (scored as in fair:m:<model>), until due (see fair_queues)
//	P:fair:dt:<model>  zset: the same ids by run-after time (ms)
//	P:fair:dm          zset: the models with delayed retries, by when their first is due (ms)
//	P:fair             zset: the legacy queue: every pending task id, as versions before 2026-11-28
//	                   kept them (one queue); read, drained and never written by this version
//	P:vtag             string: the largest tag claimed so far (a new owner's line starts there)
//	P:vtime            string: the same, for processes of versions before vtag (see claim_vtime)
//	P:tseq             string: counts queueings, for the tie-breaking count
//	P:sched:<owner>    hash: the owner's weight (w), last tag (last), pending tasks (pend) and when
//	                   its task index expires (ixp, ms)
//	P:run:o:<owner>    zset: the owner's processing task ids by lease end (ms): its running count
//	P:run:m:<model>    zset: the model's processing task ids by lease end (ms)
//	P:capped           hash: which running sets the store keeps: "o" (the owners') once a claim
//	                   has had an owner cap, "m:<model>" once one has had a cap for the model
//	P:model:<model>    hash: the model's next start allowed by its rate (next, ms) and pause end (pause, ms)
//	P:paused           zset: paused models by pause end (ms), so SchedulerStats lists them all
//	P:leases           zset: processing task ids by lease end (ms)
//	P:webhooks         zset: due callbacks by due time (ms): "<task id>" (completed), "<task id>:processing"
//	P:hookclaim:<token> string: the deliveries a webhook claim leased ("<lease end>:<candidate places>"),
//	                   kept for the lease, for the claim sent again (see claimHooksScript)
//	P:tasks:<owner>    zset: the owner's tasks, "<created ms, 13 digits>:<id>" (for listing), expiring
//	                   Retention+24h after its last task was created at the earliest, and at most
//	                   min(1h, Retention/2) later than that; a task that ends more than a day after
//	                   it was made is put back and the index kept for its retention (keep_listed)
//	P:all              zset: every task, "<created ms, 13 digits>:<id>" (operators' listing;
//	                   trimmed, every 64 queueings, of tasks created more than Retention+24h ago, as owners' indexes expire)
//	P:balance:<owner>  string: credit balance
//	P:ledger:<owner>   list: ledger entries, oldest first (JSON; an entry's ID is its position from 1)
//	P:refs:<owner>     set: grant and web references used
//	P:image:<id>       string: image record, JSON (task, owner, type, size, sum, created and expires
//	                   in ms), expiring with it (a record written before these strings is a hash of
//	                   the same fields, read too)
//	P:blob:<id>        string: image bytes (the default BlobStore, blob/redis)
//	P:apikey:<sha256>  hash: API key record
//	P:apikeys:<owner>  list: the owner's key hashes, oldest first
//	P:delkey:<sha256>  string: the token of the call that deleted the key, kept 5 minutes, for
//	                   the deletion sent again (see deleteKeyScript)
//	P:layout           hash: the number of shards the store is laid out in (shards), recorded by
//	                   the first CheckLayout or by MigrateToShards
//	P:secret:<name>    string: a secret shared by all processes (SharedSecret, ReplaceSharedSecret)
//	P:session:<id>     hash: console session (owner, key id, created, expires), expiring with it
//	P:sessions:<owner> zset: the owner's session ids by expiry (ms), for EndSessions
//	P:pstats:<minute>  hash: provider calls by outcome and fallbacks counted in one minute
//	                   (Unix time / 60), kept imagegen.ProviderStatsRetention
//	P:finished         pub/sub channel: ids of tasks as they finish (a shard channel, SPUBLISH, when sharded)
package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	blobredis "github.com/imagegen/imagegen/blob/redis"
	"github.com/imagegen/imagegen/internal/dialwatch"
	"github.com/imagegen/imagegen/internal/groupcommit"
	"github.com/imagegen/imagegen/internal/redisglob"
)

var (
	_ imagegen.Store          = (*Store)(nil)
	_ imagegen.BytesCompleter = (*Store)(nil)
)

// DefaultRetention is how long finished tasks and images are kept when
// Config.Retention is zero.
const DefaultRetention = 24 * time.Hour

// BlobTTLMargin is how much longer than Retention the default BlobStore
// keeps a blob: the bytes are written just before their record, and must
// not expire before it.
const BlobTTLMargin = 10 * time.Minute

// Config configures a Store.
type Config struct {
	// Prefix names the store's keys; stores with different prefixes on
	// one Redis are independent. Default "imagegen".
	Prefix string
	// Retention is how long a finished task and its images are kept.
	// Default DefaultRetention.
	Retention time.Duration
	// Blobs keeps image bytes. Default: blob/redis on the same client
	// and prefix, each blob expiring after Retention + BlobTTLMargin.
	Blobs imagegen.BlobStore
	// Clock, when set, replaces the Redis server's clock (tests only):
	// its time is passed to every script, and reads hide what has
	// expired by it even if its TTL has not run out on the server.
	Clock imagegen.Clock
	// WaitReplicas, when positive, makes a submit, a finish (success,
	// failure, cancel, a recovery's failure), a ledger entry (a grant, a
	// web charge, a requeue's recharge), a new key and a key's
	// revocation return only once that many replicas of the master have
	// it (WAIT, on the connection that made the change, in the same
	// round trip), so that a master's death
	// after the answer loses none of them (with Sentinel or Cluster
	// failover to one of those replicas). When fewer confirm within
	// WaitTimeout, the call returns ErrNotReplicated (the API answers
	// 500): the change was made on the master and may or may not
	// survive it. Default 0: answer once the master has it.
	WaitReplicas int
	// WaitTimeout bounds each wait for replicas (default
	// DefaultWaitTimeout).
	WaitTimeout time.Duration
	// Shards spreads the store over that many hash tags (see Sharding in
	// the package documentation). Default 1 on a single node or
	// Sentinel, where it changes nothing, and DefaultClusterShards on a
	// Cluster client (*redis.ClusterClient). Every process of a store
	// must use the same value; changing it moves owners between shards,
	// so it is fixed once the store holds data (an existing single-node
	// store moves to a Cluster with MigrateToShards). The first
	// CheckLayout (or Ping) of a prefix records the value in Redis; a
	// store with another value then gets ErrLayoutMismatch from both.
	Shards int
}

// Store is the Redis store. It is safe for concurrent use by any number
// of goroutines and processes.
type Store struct {
	rdb       goredis.UniversalClient
	k         keys          // the global keys (secrets, provider stats, API keys, sessions)
	shards    []keys        // the shards' keys; shards[0] is k when there is one
	next      atomic.Uint32 // where the next claim starts going round the shards
	sharded   bool          // more than one shard
	retention time.Duration
	blobs     imagegen.BlobStore
	ownBlobs  *blobredis.Store // blobs, when the store made them: CompleteTaskWithBytes
	clock     imagegen.Clock   // nil: server time
	creates   groupcommit.Batcher[createArgs, createResult]
	completes groupcommit.Batcher[completeArgs, struct{}]
	keyReads  groupcommit.Batcher[string, map[string]string] // KeyByHash
	watch     watcher
	dials     *dialwatch.Watch // names a refused connection behind a deadline

	layoutChecked atomic.Bool // CheckLayout found Shards as recorded: it checks no more

	waitReplicas int           // WAIT for this many replicas after acknowledged changes (0: none)
	waitTimeout  time.Duration // bound of each WAIT
}

// New returns a Store on rdb (a standalone, Sentinel or Cluster client).
func New(rdb goredis.UniversalClient, o Config) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("redis store: client is required")
	}
	if strings.ContainsAny(o.Prefix, "{}") {
		return nil, fmt.Errorf("redis store: Config.Prefix must not contain braces (got %q)", o.Prefix)
	}
	if o.Retention < 0 || (o.Retention > 0 && o.Retention < time.Millisecond) {
		// Redis's TTLs are whole milliseconds: less would be PX 0, which
		// SET refuses and PEXPIRE takes as "delete now".
		return nil, fmt.Errorf("redis store: Config.Retention must be 0 (the default) or at least a millisecond (got %v)", o.Retention)
	}
	if err := checkShards(o.Shards); err != nil {
		return nil, err
	}
	if o.WaitReplicas < 0 || o.WaitTimeout < 0 {
		return nil, fmt.Errorf("redis store: Config.WaitReplicas and WaitTimeout must not be negative (got %d, %v)", o.WaitReplicas, o.WaitTimeout)
	}
	s := &Store{
		rdb:       rdb,
		k:         keys{tag: "{" + cmp.Or(o.Prefix, "imagegen") + "}"},
		retention: cmp.Or(o.Retention, DefaultRetention),
		clock:     o.Clock,

		waitReplicas: o.WaitReplicas,
		waitTimeout:  cmp.Or(o.WaitTimeout, DefaultWaitTimeout),
	}
	s.creates = groupcommit.Batcher[createArgs, createResult]{Run: s.runCreates, MaxBatch: maxBatch, MaxInFlight: maxInFlight, Gather: true,
		MinBehind: minBehind}
	s.completes = groupcommit.Batcher[completeArgs, struct{}]{Run: s.runCompletes, MaxBatch: maxBatch, MaxInFlight: maxCompletesInFlight,
		Size: completeArgs.size, MaxSize: blobredis.MaxBatchBytes}
	s.keyReads = groupcommit.Batcher[string, map[string]string]{Run: s.runKeyReads, MaxBatch: maxBatch, MaxInFlight: maxInFlight, Gather: true,
		MinBehind: minBehind}
	n := o.Shards
	if n == 0 {
		n = 1
		if _, ok := rdb.(*goredis.ClusterClient); ok {
			n = DefaultClusterShards
		}
	}
	for i := range n {
		s.shards = append(s.shards, keys{tag: shardTag(cmp.Or(o.Prefix, "imagegen"), i, n)})
	}
	s.sharded = n > 1
	if s.sharded {
		// A batch waits for every shard it spans: with one in flight, a
		// slow shard would hold the successes of all the others.
		s.completes.MaxInFlight = maxInFlight
	}
	s.watch = watcher{rdb: rdb, sharded: s.sharded}
	s.dials = dialwatch.Attach(rdb)
	s.blobs = o.Blobs
	if s.blobs == nil {
		bc := blobredis.Config{Prefix: cmp.Or(o.Prefix, "imagegen"), TTL: s.retention + BlobTTLMargin, Clock: o.Clock}
		if s.sharded {
			// An image's bytes live in its task's shard, found from the
			// image id as the record is.
			bc.KeyTag = func(key string) string { return s.byID(key).tag }
			bc.ListPattern = "{" + redisglob.Escape(cmp.Or(o.Prefix, "imagegen")) + ":*}:blob:*"
		}
		blobs, err := blobredis.New(rdb, bc)
		if err != nil {
			return nil, fmt.Errorf("redis store: %w", err)
		}
		s.blobs, s.ownBlobs = blobs, blobs
	}
	return s, nil
}

// Ping checks that Redis answers, and that the store's number of shards
// is the one recorded for its prefix (CheckLayout, until it has
// succeeded once). When Redis does not answer, the error names the last
// failed connection attempt too (a refused connection, say), not only
// the deadline that go-redis's retries ran into. A store of the wrong
// number of shards fails every Ping (ErrLayoutMismatch), so a readiness
// probe keeps it out of service.
func (s *Store) Ping(ctx context.Context) error {
	start := time.Now()
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis store: ping: %w", s.dials.Explain(err, start))
	}
	return s.CheckLayout(ctx)
}

// KeyPattern is a SCAN/KEYS pattern that matches every key of the
// store, for operators' tools and for tests that clean up after
// themselves. A store on one shard has its keys under "{P}:" (P the
// prefix), and its pattern matches them alone. A sharded store has them
// under "{P}:" and its shards' tags, "{P:<shard>.<salt>}:", which no
// glob tells from the keys of a store whose prefix is P, a ':' and a
// digit or ':' ("P:1x", say): its pattern, "{P[:}][0-9:]*", matches
// those too (but not "P:x"'s or "Px"'s), and OwnsKey tells them apart.
// Delete what the pattern matches and OwnsKey keeps.
func (s *Store) KeyPattern() string {
	if s.sharded {
		return "{" + redisglob.Escape(strings.Trim(s.k.tag, "{}")) + "[:}][0-9:]*"
	}
	return redisglob.Escape(s.k.tag) + ":*" // the prefix may hold glob characters (*?[\)
}

// OwnsKey reports whether key, one KeyPattern matched, is the store's:
// under "{P}:" or one of its shards' tags. (A store whose prefix is
// named as one of those tags, "P:0.12", shares their keys: no name
// tells them apart.)
func (s *Store) OwnsKey(key string) bool {
	end := strings.IndexByte(key, '}') + 1 // the prefix holds no braces: the tag ends at the first
	if end == 0 || !strings.HasPrefix(key[end:], ":") {
		return false
	}
	tag := key[:end]
	if tag == s.k.tag {
		return true
	}
	// "{P:<shard>.<salt>}": shard names the one tag it can be.
	rest, ok := strings.CutPrefix(tag, strings.TrimSuffix(s.k.tag, "}")+":")
	if !s.sharded || !ok {
		return false
	}
	shard, _, ok := strings.Cut(rest, ".")
	i, err := strconv.Atoi(shard)
	return ok && err == nil && i >= 0 && i < len(s.shards) && s.shards[i].tag == tag
}

// byOwner is the shard of owner's keys: its balance, ledger, tasks and
// their images.
func (s *Store) byOwner(owner string) keys {
	if !s.sharded {
		return s.shards[0]
	}
	return s.shards[int(imagegen.OwnerMark(owner))%len(s.shards)]
}

// byID is the shard of a task, an image or a callback delivery, from its
// id: one made by imagegen.NewOwnedID (or starting with one, as
// "<task id>:processing") carries its owner's mark. An id without a mark
// is placed in shard 0, where nothing of a sharded store is ever
// created with it (CreateTask refuses such ids), so lookups find
// nothing.
func (s *Store) byID(id string) keys {
	if !s.sharded {
		return s.shards[0]
	}
	if len(id) >= 36 {
		if mark, ok := imagegen.IDOwnerMark(id[:36]); ok {
			return s.shards[int(mark)%len(s.shards)]
		}
	}
	return s.shards[0]
}

// idPlaced reports whether id can be found from itself (always on one
// shard).
func (s *Store) idPlaced(id string) bool {
	if !s.sharded {
		return true
	}
	if len(id) < 36 {
		return false
	}
	_, ok := imagegen.IDOwnerMark(id[:36])
	return ok
}

// keys names the store's keys. Variable parts come last, so keys of
// different kinds never collide.
type keys struct{ tag string }

func (k keys) task(id string) string             { return k.tag + ":task:" + id }
func (k keys) ownerTasks(owner string) string    { return k.tag + ":tasks:" + owner }
func (k keys) finished() string                  { return k.tag + ":finished" } // pub/sub channel of finished task ids
func (k keys) pending() string                   { return k.tag + ":pending" }
func (k keys) allTasks() string                  { return k.tag + ":all" }
func (k keys) webhooks() string                  { return k.tag + ":webhooks" }
func (k keys) hookClaim(token string) string     { return k.tag + ":hookclaim:" + token }
func (k keys) leases() string                    { return k.tag + ":leases" }
func (k keys) balance(owner string) string       { return k.tag + ":balance:" + owner }
func (k keys) ledger(owner string) string        { return k.tag + ":ledger:" + owner }
func (k keys) refs(owner string) string          { return k.tag + ":refs:" + owner }
func (k keys) image(id string) string            { return k.tag + ":image:" + id }
func (k keys) apiKey(hash string) string         { return k.tag + ":apikey:" + hash }
func (k keys) apiKeys(owner string) string       { return k.tag + ":apikeys:" + owner }
func (k keys) deletedKey(hash string) string     { return k.tag + ":delkey:" + hash }
func (k keys) session(id string) string          { return k.tag + ":session:" + id }
func (k keys) ownerSessions(owner string) string { return k.tag + ":sessions:" + owner }

// nowArg is ARGV[1] of every script: the injected clock's time in
// milliseconds, or "" to read the server's clock.
func (s *Store) nowArg() string {
	if s.clock == nil {
		return ""
	}
	return strconv.FormatInt(s.clock.Now().UnixMilli(), 10)
}

// expired reports whether a record with the given expiry (ms, 0 for none)
// is gone by the injected clock. Without one, Redis TTLs decide.
func (s *Store) expired(expiresMS int64) bool {
	return s.clock != nil && expiresMS > 0 && s.clock.Now().UnixMilli() >= expiresMS
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

func (k keys) fair() string                  { return k.tag + ":fair" } // the legacy fair queue (see fair_queues)
func (k keys) fairModel(model string) string { return k.tag + ":fair:m:" + model }
func (k keys) fairModels() string            { return k.tag + ":fair:models" }

// parked names owner's parked queue of model (parked_key in the prelude).
func (k keys) parked(model, owner string) string {
	return k.tag + ":fair:p:" + strconv.Itoa(len(model)) + ":" + model + ":" + owner
}
func (k keys) parkedOwners(model string) string { return k.tag + ":fair:pk:" + model }
func (k keys) parkedTasks(model string) string  { return k.tag + ":fair:pa:" + model }
func (k keys) parkedModels() string             { return k.tag + ":fair:parked" }

// The model's delayed retries (see fair_queues in the prelude): by
// fair-share score, by run-after time, and the models that have some.
func (k keys) delayed(model string) string    { return k.tag + ":fair:d:" + model }
func (k keys) delayedDue(model string) string { return k.tag + ":fair:dt:" + model }
func (k keys) delayedModels() string          { return k.tag + ":fair:dm" }
func (k keys) vtime() string                  { return k.tag + ":vtime" }
func (k keys) vtag() string                   { return k.tag + ":vtag" }
func (k keys) capped() string                 { return k.tag + ":capped" }
func (k keys) tseq() string                   { return k.tag + ":tseq" }
func (k keys) sched(owner string) string      { return k.tag + ":sched:" + owner }
func (k keys) model(model string) string      { return k.tag + ":model:" + model }
func (k keys) paused() string                 { return k.tag + ":paused" } // model → its pause's end (ms)

// prelude holds the clock and the steps that several scripts share;
// newScript prepends to each script the definitions it uses.
//
// The scheduling steps (enqueue, dequeue, stop_running) name the
// owner's and the model's keys from a task key's prefix, since which
// owner or model a task has is known only once its hash is read; they
// share the store's hash tag, so every script still touches one slot.
// (Spreading owners over a Cluster's slots, issue 25, moves these keys
// under a tag of their owner's shard.)
const prelude = `
local function now_ms()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

-- skey names the store's key with the given suffix, from another of
-- its keys (all start with the store's hash tag, and every key of one
-- script run has the same tag, so it is found once).
local store_tag
local function skey(key, suffix)
  if not store_tag then store_tag = string.match(key, '^(.-})') end
  return store_tag .. ':' .. suffix
end

-- num formats a number exactly (tags and scores outgrow %.14g).
local function num(x) return string.format('%.17g', x) end

-- int formats a whole number. The hot scripts hand redis.call strings,
-- not Lua numbers: redis.call formats each number with %.17g, which
-- costs about ten times what %d does (a microsecond per argument).
local function int(x) return string.format('%d', x) end

-- whole is num(x), written with int when x is a whole number that %d
-- writes exactly (below 2^53), as tags and scores usually are.
local function whole(x)
  if x % 1 == 0 and x >= 0 and x < 9007199254740992 then return int(x) end
  return num(x)
end

-- tag_score is the score in fair of tag and k (0 <= k < 1024): tag *
-- 1024 + k, whole while the tag is (below 2^43, as tags are), so that
-- Redis keeps it as an integer. A queue short enough to be a listpack
-- (128 tasks by default) is walked from its head at every insert, and a
-- fractional score is read back with strtod at each step: tag + k/1024,
-- the earlier form, cost a submit about 80k server instructions with 64
-- tasks queued (callgrind). claim_vtime reads the tag back.
local function tag_score(tag, k) return whole(tag * 1024 + k) end

-- claim_vtime is the tag of fair's score, as vtag keeps it. A score
-- written before tags were scaled by 1024 (tag + k/1024) reads as a tag
-- 1024 times too small, which does not move vtag past the tags of the
-- later form: such tasks sort before every later one and are claimed
-- first (a store upgraded with tasks queued drains them first).
--
-- Processes of the earlier version read and write vtime, and read a
-- score as the tag itself: one that claims a task of the later form
-- writes a vtime 1024 times too large. This version keeps vtag, which
-- its first claim starts from vtime (until then its submits read
-- vtime), and reads vtime no more: a vtime misread by the earlier
-- version is taken over at most once and cannot compound. Its claims
-- write vtime too, in tag units, which the earlier version's submits
-- start from. While both versions run, an owner's next tasks may sort
-- behind others' until its queue empties.
local function claim_vtime(score) return math.floor(score / 1024) end

-- numof is tonumber for the numbers the store writes: nil for a value
-- that is not one, and for one that is not finite ("nan", "inf": Lua's
-- tonumber reads them as numbers, and a NaN or infinite tag or score
-- fails the ZADD of a task into fair, or sends every later tag to
-- infinity) or not below 2^53.
local function numof(s)
  local x = tonumber(s)
  if x and x - x == 0 and x < 9007199254740992 and x > -9007199254740992 then return x end
end

-- read_string is GET, but a key of another kind (which only something
-- other than the store writes) reads as none: for vtag and vtime, which
-- the claim writes over with SET (that replaces a key of any kind).
local function read_string(key)
  local v = redis.pcall('GET', key)
  if type(v) == 'table' then return false end
  return v
end

-- read_vtag is the largest tag claimed: vtag, the key given, or vtime
-- before this version's first claim (0 when it is not a number, or not
-- a string: the next claim writes it over).
local function read_vtag(vtag)
  return numof(read_string(vtag) or read_string(skey(vtag, 'vtime'))) or 0
end

-- queue_head_tag is the tag at the head of a model's fair queue q
-- (fair:m:<model>: the model's pending tasks neither parked nor
-- delayed, see fair_queues), read back from its score as claim_vtime
-- does, or false when the queue is empty (or of another kind, or its
-- score is not a number).
local function queue_head_tag(q)
  local h = redis.pcall('ZRANGE', q, '0', '0', 'WITHSCORES')
  if h.err or #h == 0 then return false end
  local score = numof(h[2])
  return score ~= nil and claim_vtime(score)
end

-- queue_base is the virtual time a task queued for a model is tagged
-- from (storekit.QueueBase, docs/scheduling.md): v, the largest tag
-- claimed (read_vtag), unless the model's queue is behind it (held back
-- while other models ran: paused, at its cap, waiting for its rate),
-- when it is one less than head, the tag at the model's head
-- (queue_head_tag; false: the queue is empty), so that an owner's first
-- task there waits behind one turn of the owners queued there, not
-- behind their whole backlog.
local function queue_base(v, head)
  if head and head < v then return head - 1 end
  return v
end

-- stride is how far one task moves the tag of an owner of weight w.
local function stride(w)
  w = numof(w) or 1
  if w < 1 or w > 1000 then w = 1 end
  return math.floor(1000 / w)
end

-- An owner's scheduling state (its sched hash) only orders its tasks:
-- a task is queued, claimed and dequeued whatever that key holds. A
-- number in it that is not one reads as none, and the scripts that move
-- a task already made (next_tag, dequeue, the claim) read and write it
-- with pcalls, so that a key of another kind (which only something
-- other than the store writes) leaves no task half moved: a script that
-- fails keeps what it wrote before. The create script refuses such an
-- owner's new tasks instead (see createScript).

-- next_tag gives the owner's next task of model its tag (the score in
-- its model's fair queue): the owner's stride after base, where base is
-- the larger of the owner's last tag (while it has pending tasks) and
-- queue_base: the largest tag claimed, or one less than the tag at the
-- head of the model's queue when that is behind it. It returns the tag
-- and the queueing count mod 1024, which keeps ties in queueing order
-- (see tag_score). It counts the task as pending.
local function next_tag(task, owner, model)
  local sched = skey(task, 'sched:' .. owner)
  local f = redis.pcall('HMGET', sched, 'w', 'last', 'pend')
  if f.err then f = {} end
  local base = queue_base(read_vtag(skey(task, 'vtag')), queue_head_tag(skey(task, 'fair:m:' .. model)))
  if (numof(f[3]) or 0) > 0 then base = math.max(base, numof(f[2]) or 0) end
  local tag = base + stride(f[1])
  redis.pcall('HSET', sched, 'last', whole(tag))
  redis.pcall('HINCRBY', sched, 'pend', '1')
  -- A pcall: the queueing count only breaks ties of tag, and a tseq of
  -- another kind (or not a number) fails INCR, here after the writes
  -- above and those of the script that gives a task back; it counts as
  -- 0 instead.
  local seq = redis.pcall('INCR', skey(task, 'tseq'))
  if type(seq) ~= 'number' then seq = 0 end
  return tag, seq % 1024
end

-- enqueue puts a pending task in the queues, ready at run_after: in
-- its model's fair queue (fair:m:<model>), its model in the record of
-- the models with a queue (fair:models), and in pending. A task that was
-- in the legacy queue (fair) goes back into its model's. owner and
-- model are the task's fields, as its caller read them (false: none).
-- Its calls are plain: a caller asks takes_enqueue first, before its
-- own writes.
local function enqueue(task, id, run_after, owner, model)
  model = model or ''
  redis.call('ZADD', skey(task, 'fair:m:' .. model), tag_score(next_tag(task, owner or '', model)), id)
  redis.call('SADD', skey(task, 'fair:models'), model)
  redis.call('ZADD', skey(task, 'pending'), int(run_after), id)
end

-- parked_key names owner's parked queue of model (see claimScript:
-- the tasks a claim found their owner at its cap for, set aside), the
-- model's length first, so that no other model and owner name it.
local function parked_key(task, model, owner)
  return skey(task, 'fair:p:' .. #model .. ':' .. model .. ':' .. owner)
end

-- parked_left follows tasks ids (a list, maybe empty) leaving owner's
-- parked queue pq of model: they leave the model's parked tasks
-- (fair:pa:<model>, every parked owner's together, which positions
-- count), and once pq is empty the owner leaves the model's parked
-- owners (fair:pk:<model>), and a model with none left leaves
-- fair:parked. pcalls: a key of another kind holds no task.
local function parked_left(task, pq, model, owner, ids)
  if #ids > 0 then redis.pcall('ZREM', skey(task, 'fair:pa:' .. model), unpack(ids)) end
  if redis.pcall('EXISTS', pq) == 1 then return end
  local pk = skey(task, 'fair:pk:' .. model)
  redis.pcall('ZREM', pk, owner)
  if redis.pcall('EXISTS', pk) == 0 then redis.pcall('SREM', skey(task, 'fair:parked'), model) end
end

-- delayed_head notes in fair:dm (fair is the shard's legacy queue's
-- key, which names the others) when the first of model's delayed
-- retries is due (the lowest score of fair:dt:<model>), or takes the
-- model out of it when it has none (see fair_queues). pcalls: a key of
-- another kind holds none.
local function delayed_head(fair, model)
  local h = redis.pcall('ZRANGE', fair .. ':dt:' .. model, '0', '0', 'WITHSCORES')
  if h.err or #h == 0 then
    redis.pcall('ZREM', fair .. ':dm', model)
  else
    redis.pcall('ZADD', fair .. ':dm', h[2], model)
  end
end

-- undelay takes task id out of model's delayed retries (fair:d:<model>
-- and fair:dt:<model>), and reports whether it was there.
local function undelay(fair, id, model)
  if redis.pcall('ZREM', fair .. ':d:' .. model, id) ~= 1 then return false end
  redis.pcall('ZREM', fair .. ':dt:' .. model, id)
  delayed_head(fair, model)
  return true
end

-- dequeue takes a pending task of owner and model out of the queues:
-- its model's fair queue (the model leaves fair:models when that empties
-- it), its model's delayed retries, its owner's parked queue of the
-- model, or the legacy one (a task queued by an earlier version), and
-- pending. pcalls: a queue of another kind holds no task.
local function dequeue(task, id, owner, model)
  local q = skey(task, 'fair:m:' .. model)
  local out = redis.pcall('ZREM', q, id) == 1
  if out then
    if redis.pcall('ZCARD', q) == 0 then redis.pcall('SREM', skey(task, 'fair:models'), model) end
  elseif undelay(skey(task, 'fair'), id, model) then
    out = true
  else
    local pq = parked_key(task, model, owner or '')
    out = redis.pcall('ZREM', pq, id) == 1
    if out then
      parked_left(task, pq, model, owner or '', {id})
    else
      out = redis.pcall('ZREM', skey(task, 'fair'), id) == 1
    end
  end
  if out then
    redis.pcall('HINCRBY', skey(task, 'sched:' .. owner), 'pend', '-1')
  end
  redis.call('ZREM', skey(task, 'pending'), id)
end

-- The fair queues of a shard: one per model of the pending tasks
-- (fair:m:<model>, scored as fair was: see tag_score), the models that
-- have one listed in fair:models, and the legacy queue, fair, where
-- versions before the model queues (2026-11-28) kept every pending
-- task. Together they hold the same tasks in the same order as the one
-- queue did: the claim merges their heads by score (then id, as a zset
-- orders equal scores), so that a model held back (paused, at its cap,
-- waiting for its rate) is passed over without reading its tasks.
--
-- Upgrading needs no step by hand: the legacy queue is merged as one
-- more queue, whose tasks are checked one by one (as the one queue's
-- were), until the claims, cancels and requeues of this version have
-- emptied it (nothing of this version writes into it; a task claimed
-- from it that is given back goes into its model's queue). Positions
-- and SchedulerStats count it too. While earlier versions still run,
-- their submits write into fair (claimed here too), but their claims do
-- not see the model queues: upgrade the workers first.

-- fair_queues makes the reading state of the shard's fair queues
-- (legacy is fair's key): the legacy queue when it holds tasks, then
-- one per model in fair:models for which skip(model) is not true (skip
-- may be nil), then the parked queues given (parked: a list of {key,
-- model, owner}, or nil: the claim's, or parked_sets'), each to be read
-- chunk entries at a time at first (queue_head). gone true says that
-- the caller knows the legacy queue holds nothing (nil: it is asked).
-- Their scores are read
-- only when there are several to merge (q.scores): Redis writes each
-- score of a reply with printf.
--
-- Parked queues: a claim that finds a task's owner at its cap moves
-- the task out of its model's queue into the owner's parked queue of
-- the model (fair:p:<len(model)>:<model>:<owner>, same score) and the
-- model's parked tasks (fair:pa:<model>), and notes the owner in
-- fair:pk:<model> (scored by when a claim last looked at it) and the
-- model in fair:parked. Claims look at parked owners, not their tasks,
-- and merge the parked queue of an owner with a free slot, so a backlog
-- behind a cap is read once, not at every claim (see claimScript).
--
-- Delayed retries: a claim that meets in a model's queue a retry still
-- waiting out its delay (run_after to come) moves it, uncounted, out of
-- the queue into the model's delayed retries, under the same score
-- (fair:d:<model>, for positions, stats and cancels) and by run_after
-- (fair:dt:<model>), and notes the model in fair:dm, scored by when its
-- first retry is due. Each claim first moves back into their models'
-- queues, under their scores, the retries now due. A claim moves at
-- most 1024 retries of a queue aside, and 1024 of a model back (see
-- claimScript): so more retries waiting at the head of a model's queue
-- than a claim passes over hold back none of the model's other tasks,
-- and a retry still starts at its tag's place once due.
local function fair_queues(legacy, chunk, skip, parked, gone)
  local qs, keys, models, owners = {}, {}, {}, {}
  local n = not gone and redis.pcall('ZCARD', legacy)
  if type(n) == 'number' and n > 0 then keys[1], models[1] = legacy, false end -- of another kind: none
  local names = redis.pcall('SMEMBERS', legacy .. ':models')
  if names.err then names = {} end -- of another kind: none (the submits fail until it is mended)
  for _, m in ipairs(names) do
    if not (skip and skip(m)) then
      local k = #keys + 1
      keys[k], models[k] = legacy .. ':m:' .. m, m
    end
  end
  for _, p in ipairs(parked or {}) do
    local k = #keys + 1
    keys[k], models[k], owners[k] = p.key, p.model, p.owner
  end
  local scores = #keys > 1
  for j = 1, #keys do -- each made whole at once: a table grown field by field is rehashed as it grows
    qs[j] = {key = keys[j], model = models[j], owner = owners[j] or false, from = 0, chunk = chunk, more = true, i = 1,
      ids = {}, passed = 0, scores = scores, taken = false, stale = false, sc = false, nums = false, park = false,
      delay = false}
  end
  return qs
end

-- parked_sets lists the keys of the shard's parked tasks, one a model
-- with parked owners (fair:pa:<model>, every parked owner's tasks of the
-- model together), and of its delayed retries, one a model with some
-- (fair:d:<model>), for positionsScript and statsScript: a parked or
-- delayed task keeps its score, so these count and merge as the
-- models' queues do.
local function parked_sets(legacy)
  local out = {}
  local models = redis.pcall('SMEMBERS', legacy .. ':parked')
  if not models.err then -- of another kind: none
    for _, m in ipairs(models) do out[#out + 1] = {key = legacy .. ':pa:' .. m, model = m} end
  end
  models = redis.pcall('ZRANGE', legacy .. ':dm', '0', '-1')
  if not models.err then
    for _, m in ipairs(models) do out[#out + 1] = {key = legacy .. ':d:' .. m, model = m} end
  end
  return out
end

-- queue_head is the id of q's first task not yet looked at (q.i; when
-- q.scores, its score is q.sc[q.i], as a number q.nums[q.i]), reading
-- q's next chunk (growing fourfold, up to maxchunk) when the ones read
-- are used up, or nil when q has no more (a key of another kind has
-- none).
local function queue_head(q, maxchunk)
  if q.i > #q.ids then
    if not q.more then return nil end
    local ids
    if q.scores then
      local r = redis.pcall('ZRANGE', q.key, int(q.from), int(q.from + q.chunk - 1), 'WITHSCORES')
      if r.err then r = {} end
      local sc, nums = {}, {}
      ids = {}
      for j = 1, #r, 2 do
        local k = #ids + 1
        ids[k], sc[k], nums[k] = r[j], r[j + 1], tonumber(r[j + 1])
      end
      q.sc, q.nums = sc, nums
    else
      ids = redis.pcall('ZRANGE', q.key, int(q.from), int(q.from + q.chunk - 1))
      if ids.err then ids = {} end
    end
    q.ids, q.i = ids, 1
    q.more = #ids == q.chunk
    q.from = q.from + #ids
    q.chunk = math.min(q.chunk * 4, maxchunk)
    if #ids == 0 then return nil end
  end
  return q.ids[q.i]
end

-- queue_first is the queue of qs whose head comes first (lowest score,
-- then id), and its head's id, or nil when every queue is used up. A
-- queue for which drop(q) is true (drop may be nil), and one used up,
-- leave qs.
local function queue_first(qs, maxchunk, drop)
  local best, bn, bid
  local j = 1
  while j <= #qs do
    local q = qs[j]
    local id
    if not (drop and drop(q)) then id = queue_head(q, maxchunk) end
    if id then
      local x = q.scores and q.nums[q.i] -- without scores, q is the one queue
      if not best or x < bn or (x == bn and id < bid) then best, bn, bid = q, x, id end
      j = j + 1
    else
      table.remove(qs, j)
    end
  end
  return best, bid
end

-- A processing task counts in its owner's and its model's running sets
-- only while the store keeps them (see claimScript): its fields ro and
-- rm say whether it was put in each ('0': not; a task claimed before
-- the fields existed is in both).

-- kept_sets reads which running sets the store keeps (capped: "o",
-- "m:<model>") as a set.
local function kept_sets(capped)
  local set, c = {}, redis.call('HGETALL', capped)
  for k = 1, #c, 2 do set[c[k]] = true end
  return set
end

-- stop_running gives back a task's owner and model slots: it left
-- processing. ro and rm are its fields of those names as holds read
-- them, or nil (not given) to read them here; owner and model its
-- fields as the caller read them (false: none), or nil to read them
-- here when a slot needs them.
local function stop_running(task, id, ro, rm, owner, model)
  if ro == nil then
    local f = redis.call('HMGET', task, 'owner', 'model', 'ro', 'rm')
    owner, model, ro, rm = f[1], f[2], f[3], f[4]
  elseif model == nil and (ro ~= '0' or rm ~= '0') then -- holds read neither
    local f = redis.call('HMGET', task, 'owner', 'model')
    owner, model = f[1], f[2]
  end
  -- pcalls: a running set of another kind reads as none (see claimScript)
  if ro ~= '0' then redis.pcall('ZREM', skey(task, 'run:o:' .. (owner or '')), id) end
  if rm ~= '0' then redis.pcall('ZREM', skey(task, 'run:m:' .. (model or '')), id) end
end

-- run_until moves a processing task's slots to its new lease end.
local function run_until(task, id, lease_end)
  local f = redis.call('HMGET', task, 'owner', 'model', 'ro', 'rm')
  if f[3] ~= '0' then redis.pcall('ZADD', skey(task, 'run:o:' .. (f[1] or '')), lease_end, id) end
  if f[4] ~= '0' then redis.pcall('ZADD', skey(task, 'run:m:' .. (f[2] or '')), lease_end, id) end
end

-- takes_kind reports whether key can take a write of kind ('list',
-- 'set', 'zset': an RPUSH, SADD, ZADD): it holds one, or none. A script
-- asks it before the writes that a failed call would leave behind (a key
-- of another kind is written only by something other than the store).
-- A TYPE each: only the scripts that need it ask. seen (a table, or nil)
-- keeps the answers by key, for a script that asks of a key many times.
local function takes_kind(key, kind, seen)
  local ok = seen and seen[key]
  if ok == nil then
    local k = redis.call('TYPE', key)
    k = k.ok or k
    ok = k == kind or k == 'none'
    if seen then seen[key] = ok end
  end
  return ok
end

-- takes_list reports whether key can take an RPUSH (a list, or none).
local function takes_list(key) return takes_kind(key, 'list') end

-- takes_enqueue reports whether enqueue can write a task of model into
-- the queues: its model's fair queue and pending are sorted sets (or
-- none), and fair:models a set (or none). The scripts that give a task
-- back to the queue (retry, release, lease recovery, an operator's
-- requeue) take it out of the leases or set it pending before enqueue,
-- and a script that fails keeps what it wrote: a queue of another kind
-- left the task pending in no queue and with no lease, never claimed
-- nor recovered. They ask this before their first write and change
-- nothing when it is false. seen is takes_kind's, for a script that
-- gives back several tasks: three TYPEs a run at most, and one a model.
local function takes_enqueue(task, model, seen)
  return takes_kind(skey(task, 'fair:m:' .. model), 'zset', seen) and takes_kind(skey(task, 'fair:models'), 'set', seen) and
    takes_kind(skey(task, 'pending'), 'zset', seen)
end

-- finish_mark is what a cancel, a worker's failure, retry or release
-- leaves on the task whose attempt it ended (field cx): its call's token
-- and what it refunded (0 for a retry or release).
local function finish_mark(token, refunded) return token .. ':' .. refunded end

-- resent_finish answers a call of those sent again (its reply lost)
-- as its first run did, 1 + what it refunded, when the task's cx
-- (finish_mark) is that call's token's; else nil.
local function resent_finish(cx, token)
  local t, refunded = string.match(cx or '', '^(.*):(%d+)$')
  if t == token then return 1 + tonumber(refunded) end
end

-- give_back moves a processing task whose lease its caller holds (h,
-- what holds read) back to pending, ready at run_after, with last_error
-- and its call's token (cx, as a failure leaves it: see resent_finish):
-- out of the leases and its running slots, into the queues. It asks
-- takes_enqueue before its first write and changes nothing, returning
-- false, when a queue cannot take the task (see takes_enqueue); else it
-- returns true. Retry and release share it.
local function give_back(task, id, leases, h, run_after, now, last_error, token)
  local f = redis.call('HMGET', task, 'owner', 'model')
  if not takes_enqueue(task, f[2] or '') then return false end
  redis.call('ZREM', leases, id)
  stop_running(task, id, h[5], h[6], f[1], f[2])
  redis.call('HSET', task, 'status', 'pending', 'lease_until', 0, 'run_after', run_after,
    'updated', now, 'last_error', last_error, 'cx', finish_mark(token, 0))
  enqueue(task, id, run_after, f[1], f[2])
  return true
end

-- ledger_entry is a ledger entry as JSON, with its numbers written
-- exactly: amount and bal are given as the strings of the integers they
-- are (int, exact_balance), at is written with int. cjson.encode writes
-- a number with 14 significant digits: a grant of 100000000000001 was
-- kept as 1e+14, which is not the grant and which no reader could read
-- back as an integer, so that the owner's ledger could be read no more.
-- op, a call's token, is written when given.
local function ledger_entry(kind, amount, ref, at, bal, op)
  local e = '{"kind":' .. cjson.encode(kind) .. ',"amount":' .. amount .. ',"ref":' .. cjson.encode(ref) ..
    ',"at":' .. int(at) .. ',"bal":' .. bal
  if op then e = e .. ',"op":' .. cjson.encode(op) end
  return e .. '}'
end

-- exact_balance is the balance key's value as a string of its integer,
-- given after, what INCRBY or DECRBY answered: a double in Lua, exact
-- below 2^53 (written with int), read back from the key above.
local function exact_balance(key, after)
  if after < 9007199254740992 then return int(after) end
  return redis.call('GET', key)
end

-- refund gives a failed task's cost back, once. It returns the credits
-- given back (0 when the task had them back before), or nil, having
-- written nothing, when the owner's balance or ledger cannot take them
-- (a value of another kind, which only something other than the store
-- writes, or a balance the credit would overflow): a script that fails
-- keeps what it wrote, and a credit kept without its ledger entry and
-- the task's mark would be given again at every try. Callers write
-- nothing before it that they cannot leave.
local function refund(task, balance, ledger, id, now)
  local f = redis.call('HMGET', task, 'refunded', 'cost', 'refund_ref')
  if f[1] == '1' then return 0 end
  local cost = tonumber(f[2])
  local ref = f[3] or ('refund:' .. id) -- an operator's recharge has its own
  if not takes_list(ledger) then return nil end
  local after = redis.pcall('INCRBY', balance, cost)
  if type(after) == 'table' then return nil end
  redis.call('RPUSH', ledger, ledger_entry('refund', int(cost), ref, now, exact_balance(balance, after)))
  redis.call('HSET', task, 'refunded', '1')
  return cost
end

-- finish ends a task, starts its retention, queues its callback if it
-- has one, and tells the watchers (on the channel "<tag>:finished", the
-- tag being what precedes ":task:").
-- wants_of reports whether a task with these callback and events
-- fields has a callback that asks for event (events lists them; none
-- means completed only).
local function wants_of(callback, events, event)
  if not callback then return false end
  if not events or events == '' then return event == 'completed' end
  return string.find(',' .. events .. ',', ',' .. event .. ',', 1, true) ~= nil
end

-- finished_channel and finished_publish are, once finish has found
-- them, the channel of finished tasks and the command that publishes on
-- it: every task of a script run is of one tag, so they are found once.
-- finished_at and finished_retention are the times finish last made
-- strings of (finished_snow, finished_expires, finished_sretention):
-- a script run finishes its tasks at one time.
local finished_channel, finished_publish, finished_tag
local finished_at, finished_retention, finished_snow, finished_expires, finished_sretention

-- keep_listed keeps a task that ends more than a day after it was made
-- in its owner's task index for its retention. createScript pushes an
-- owner's index out to the retention and a day (and a margin) past the
-- owner's last submit: a task that ends within a day of being made ends
-- its retention before that, and needs nothing (so the common finish
-- costs nothing more); one that ends later (a model paused for days, a
-- long backlog) would outlive the index, or, the index gone and made
-- again by a later submit, be missing from it. It is put back (ZADD NX:
-- its place is its creation) and the index given at least the task's
-- retention and a margin. (The day and the margin are Go's: the day
-- createArgs adds to the retention, and indexMargin.) created is the task's field (a string,
-- false or nil when missing); tag is what precedes ":task:" in its key,
-- its owner's shard's too (but for a task MigrateToShards moved, whose
-- id has no owner's mark: it ended before the move, and only an
-- operator's requeue ends it again, when the index this writes, in
-- shard 0, is one no listing reads, gone with its TTL).
local function keep_listed(task, tag, id, created, now, retention)
  created = tonumber(created)
  if not created or now - created <= 86400000 then return end
  local owner = redis.call('HGET', task, 'owner')
  if not owner then return end
  local index = tag .. ':tasks:' .. owner
  if type(redis.pcall('ZADD', index, 'NX', 0, string.format('%013d', created) .. ':' .. id)) == 'table' then
    return -- a value of another kind, which only something else writes: the task is listed no more, as before
  end
  local ttl = redis.call('PTTL', index)
  if ttl == -1 or ttl < retention then
    redis.call('PEXPIRE', index, int(retention + math.min(3600000, math.floor(retention / 2))))
  end
end

-- finish's h is what holds read of the task (its reply), or nil to
-- read it; more arguments are fields and values to set on the task with
-- its status.
-- leases false leaves the task in the leases, for a caller that takes a
-- batch out of them at once.
local function finish(task, leases, id, status, now, retention, hooks, h, ...)
  local hooked, created
  if h then
    stop_running(task, id, h[5], h[6])
    hooked = wants_of(h[3], h[4], 'completed')
    created = h[7]
  else
    stop_running(task, id)
    local f = redis.call('HMGET', task, 'callback', 'events', 'created')
    hooked = wants_of(f[1], f[2], 'completed')
    created = f[3]
  end
  if now ~= finished_at or retention ~= finished_retention then -- the times as strings, made once per run
    finished_at, finished_retention = now, retention
    finished_snow, finished_expires, finished_sretention = int(now), int(now + retention), int(retention)
  end
  local snow = finished_snow
  if hooked then
    redis.call('ZADD', hooks, snow, id)
  end
  if leases then redis.call('ZREM', leases, id) end
  redis.call('HSET', task, 'status', status, 'lease_until', '0', 'updated', snow, 'finished', snow, 'expires', finished_expires, ...)
  redis.call('PEXPIRE', task, finished_sretention)
  if not finished_channel then
    finished_tag = string.match(task, '^(.-}):task:')
    finished_channel, finished_publish = finished_tag .. ':finished', 'PUBLISH'
    if string.find(finished_tag, ':%d+%.%d+}$') then
      finished_publish = 'SPUBLISH' -- a Cluster's shard: only its own nodes hear it
    end
  end
  keep_listed(task, finished_tag, id, created, now, retention)
  redis.call(finished_publish, finished_channel, id)
end

-- hook_attempts is the task field that counts the attempts of a
-- delivery: one per event.
local function hook_attempts(delivery)
  if string.sub(delivery, -11) == ':processing' then return 'hook_attempts_processing' end
  return 'hook_attempts'
end

-- holds reports whether attempt holds the task's lease: it returns
-- what it read (HMGET's reply, so no table is made for it: the status,
-- attempt, callback, events, ro and rm fields, for stop_running and
-- finish, which need not read them again, and the fields given after
-- attempt: a caller that finishes the task gives 'created', for
-- keep_listed), or nil when it does not.
-- Its owner and model are left for stop_running to read when the task
-- is in a running set: rarely, and each value read costs the server a
-- string.
local function holds(task, attempt, ...)
  local f = redis.call('HMGET', task, 'status', 'attempt', 'callback', 'events', 'ro', 'rm', ...)
  if f[1] ~= 'processing' or f[2] ~= attempt then return nil end
  return f
end
`

// newScript makes a script of body and the prelude's definitions it
// uses.
func newScript(body string) *goredis.Script { return goredis.NewScript(preludeFor(body) + body) }

// TaskRetention is how long the store keeps a finished task and its
// images (Config.Retention, or DefaultRetention): the Service keeps no
// idempotency record longer (imagegen.TaskRetainer).
func (s *Store) TaskRetention() time.Duration { return s.retention }
