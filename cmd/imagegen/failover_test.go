package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// failover is a replicated Redis deployment of the test's own, under
// load: serve on url loses its master to killMaster, which returns once
// a replica has taken over and the killed node is back (as a replica:
// with -redis-wait-replicas 1 nothing is acknowledged while no replica
// answers).
type failover struct {
	url        string
	client     goredis.UniversalClient // the test's own view
	killMaster func(t *testing.T)
	// before, when set, runs once serve answers, before the load.
	before func(t *testing.T, base string, keys map[string]string)
}

// submitResult is one submit under load, as the client saw it.
type submitResult struct {
	owner string
	code  int
	id    string // acknowledged task, when code is 201
	took  time.Duration
	body  string
}

// failoverOwners gives owners keys and credits on the test's own view of
// the store, and returns the owners' keys.
func failoverOwners(t *testing.T, svc *imagegen.Service, n int, credits int64) map[string]string {
	t.Helper()
	keys := map[string]string{}
	for i := range n {
		owner := fmt.Sprintf("owner-%02d", i)
		key, _, err := svc.CreateKey(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Grant(ctx, owner, credits, "start"); err != nil {
			t.Fatal(err)
		}
		keys[owner] = key
	}
	return keys
}

// loadUntil submits for the owners from 8 goroutines, round the owners,
// until stop is closed, and returns every submit's result. A submit
// waits at most 40 s (the failover's bound on an answer is 30 s).
func loadUntil(base string, keys map[string]string, stop <-chan struct{}, acked func()) <-chan []submitResult {
	client := &http.Client{Timeout: 40 * time.Second}
	owners := make([]string, 0, len(keys))
	for o := range keys {
		owners = append(owners, o)
	}
	var (
		mu  sync.Mutex
		all []submitResult
		wg  sync.WaitGroup
	)
	for g := range 8 {
		wg.Go(func() {
			for i := g; ; i += 8 {
				select {
				case <-stop:
					return
				default:
				}
				owner := owners[i%len(owners)]
				r := submitOnce(client, base, owner, keys[owner], i)
				mu.Lock()
				all = append(all, r)
				mu.Unlock()
				if r.code == http.StatusCreated {
					acked()
				} else {
					time.Sleep(20 * time.Millisecond) // no hot loop while the store is away
				}
			}
		})
	}
	out := make(chan []submitResult, 1)
	go func() { wg.Wait(); out <- all }()
	return out
}

func submitOnce(client *http.Client, base, owner, key string, i int) submitResult {
	body := fmt.Sprintf(`{"scene":"text-to-image","prompt":"load %d"}`, i)
	req, _ := http.NewRequest("POST", base+"/api/v1/generate", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	r := submitResult{owner: owner, took: 0}
	if err != nil {
		r.took, r.body = time.Since(start), err.Error()
		return r
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.code, r.took, r.body = resp.StatusCode, time.Since(start), string(b)
	var m map[string]any
	if json.Unmarshal(b, &m) == nil && r.code == http.StatusCreated {
		r.id, _ = m["task_id"].(string)
	}
	return r
}

// runFailover runs serve on f with -redis-wait-replicas 1 and workers,
// submits for owners under load, kills the master after some submits and
// goes on until submits are acknowledged again, then checks: every
// acknowledged task succeeds, every refusal was a prompt JSON 5xx, and
// every owner's balance is exactly its grant less the tasks that exist
// (acknowledged or not: a submit that got a 5xx may have been made), and
// the sum of its ledger.
func runFailover(t *testing.T, f failover, owners int) {
	t.Helper()
	store, err := redisstore.New(f.client, redisstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(1), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	const credits = 100000
	keys := failoverOwners(t, svc, owners, credits)
	serve, base := startServeProcess(t, "-redis", f.url, "-redis-wait-replicas", "1", "-workers", "8",
		"-placeholder-delay", "10ms", "-lease", "3s", "-rate-limit", "1000000")
	if f.before != nil {
		f.before(t, base, keys)
	}

	var (
		mu      sync.Mutex
		acks    int
		ackedAt = map[int]chan struct{}{}
	)
	// reached returns a channel closed once n more submits than now are
	// acknowledged.
	reached := func(more int) <-chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		ch := make(chan struct{})
		ackedAt[acks+more] = ch
		return ch
	}
	first := reached(100)
	stop := make(chan struct{})
	results := loadUntil(base, keys, stop, func() {
		mu.Lock()
		defer mu.Unlock()
		acks++
		if ch, ok := ackedAt[acks]; ok {
			close(ch)
		}
	})
	waitAcks := func(ch <-chan struct{}, what string) {
		select {
		case <-ch:
		case <-time.After(90 * time.Second):
			close(stop)
			all := <-results
			codes := map[int]int{}
			for _, r := range all {
				codes[r.code]++
			}
			t.Logf("%d submits by status: %v", len(all), codes)
			seen := map[string]bool{}
			for _, r := range all[max(0, len(all)-200):] {
				if r.code != http.StatusCreated && !seen[r.body] && len(seen) < 5 {
					seen[r.body] = true
					t.Logf("refused: %d %s", r.code, r.body)
				}
			}
			out := serve.Output()
			t.Fatalf("timed out waiting until %s; serve's last output:\n%s", what, out[max(0, len(out)-3000):])
		}
	}
	waitAcks(first, "100 submits are acknowledged before the kill")
	killedAt := time.Now()
	f.killMaster(t)
	t.Logf("master killed; failover and rejoin took %v", time.Since(killedAt))
	waitAcks(reached(100), "100 more submits are acknowledged after the failover")
	close(stop)
	all := <-results

	var ackedIDs []string
	refused := 0
	for _, r := range all {
		if r.code == http.StatusCreated {
			ackedIDs = append(ackedIDs, r.owner+"/"+r.id)
			continue
		}
		refused++
		var m map[string]any
		if r.code < 500 || json.Unmarshal([]byte(r.body), &m) != nil || m["error"] == nil {
			t.Errorf("a submit during the failover got %d %q, want a JSON 5xx", r.code, r.body)
		}
		if r.took > 30*time.Second {
			t.Errorf("a submit was held %v before its %d", r.took, r.code)
		}
	}
	t.Logf("%d submits: %d acknowledged, %d refused", len(all), len(ackedIDs), refused)

	for _, oi := range ackedIDs {
		owner, id, _ := strings.Cut(oi, "/")
		var task *imagegen.Task
		state := func() string {
			return fmt.Sprintf("acknowledged task %s of %s is %s (%s) after %d attempts; the master was killed at %s; serve's lines about the task:\n%s",
				id, owner, task.Status, task.Error, task.Attempt, killedAt.Format(time.RFC3339Nano), linesWith(serve.Output(), id))
		}
		testenv.EventuallyNoError(t, 60*time.Second, "acknowledged task "+id+" of "+owner+" to end", func() error {
			task, err = svc.Task(ctx, owner, id)
			if err != nil {
				t.Fatalf("acknowledged task %s of %s: %v", id, owner, err)
			}
			if !task.Status.Terminal() {
				return lazyError(state) // written out only if the wait fails
			}
			return nil
		})
		if task.Status != imagegen.StatusSuccess {
			t.Fatal(state())
		}
	}
	for owner := range keys {
		var spent int64
		for cursor := ""; ; {
			page, err := svc.ListTasks(ctx, owner, "", 100, cursor)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range page.Tasks {
				if !task.Refunded {
					spent += task.Cost
				}
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		balance, err := svc.Balance(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		ledger, err := svc.Ledger(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, e := range ledger {
			sum += e.Amount
		}
		if balance != credits-spent || sum != balance {
			t.Errorf("%s: balance %d, ledger sum %d, grant less its tasks %d", owner, balance, sum, credits-spent)
		}
	}
}

// Through Sentinel with -redis-wait-replicas 1: the master SIGKILLed
// under load, serve follows the promoted replica; no acknowledged task is
// lost and every balance is exact.
func TestSentinelFailoverUnderLoad(t *testing.T) {
	t.Parallel() // mostly waiting on its own servers: it overlaps the others like it
	s := redistest.StartSentinels(t)
	runFailover(t, failover{
		url:    s.URL(0),
		client: s.Client(t),
		killMaster: func(t *testing.T) {
			old := s.Master.Addr()
			s.Master.Kill()
			testenv.EventuallyNoError(t, 60*time.Second, "the sentinels promote the replica", func() error {
				if got := s.MasterAddr(t); got != s.Replica.Addr() {
					return fmt.Errorf("master is %q", got)
				}
				return nil
			})
			// Back as a replica of the new master (as the sentinels'
			// rewrite of its configuration would bring it back): WAIT 1
			// is answered again.
			s.Master.StartAsReplicaOf(t, s.Replica)
			s.Master, s.Replica = s.Replica, s.Master
			t.Logf("master %s killed; %s promoted; %s back as its replica", old, s.Master.Addr(), s.Replica.Addr())
		},
	}, 10)
}

// Through a Cluster of three masters and three replicas: 300 tasks of 30
// owners all succeed; then, with -redis-wait-replicas 1, the busiest
// master SIGKILLed under load: its replica takes over, no acknowledged
// task is lost, every refusal is a prompt JSON 5xx and every balance is
// exact.
func TestClusterFailoverUnderLoad(t *testing.T) {
	t.Parallel() // mostly waiting on its own servers: it overlaps the others like it
	c := redistest.StartCluster(t, 3)
	runFailover(t, failover{
		url:    c.URL(),
		client: c.Client(t),
		before: func(t *testing.T, base string, keys map[string]string) {
			tasksOfOwnersSucceed(t, base, keys, 10)
			shares := c.KeyShares(t)
			t.Logf("keys per master after 300 tasks of 30 owners: %v", shares)
			for addr, share := range shares {
				if share > 0.6 {
					t.Errorf("master %s holds %.0f%% of the keys (at most 60%% wanted)", addr, 100*share)
				}
			}
		},
		killMaster: func(t *testing.T) {
			busiest := c.Busiest(t)
			c.KillMaster(t, busiest) // its replica took its slots
			busiest.Start(t)         // back, as the new master's replica
			c.WaitReplicated(t, 60*time.Second)
			t.Logf("master %s killed, its replica promoted, and back as a replica", busiest.Addr())
		},
	}, 30)
}

// tasksOfOwnersSucceed submits n tasks for each owner at once, and
// checks that every one is acknowledged and succeeds.
func tasksOfOwnersSucceed(t *testing.T, base string, keys map[string]string, n int) {
	t.Helper()
	client := &http.Client{Timeout: 40 * time.Second}
	type sub struct{ key, id string }
	subs := make(chan sub, n*len(keys))
	var wg sync.WaitGroup
	for owner, key := range keys {
		wg.Go(func() {
			for i := range n {
				r := submitOnce(client, base, owner, key, i)
				if r.code != http.StatusCreated {
					t.Errorf("submit for %s: %d %s", owner, r.code, r.body)
					return
				}
				subs <- sub{key, r.id}
			}
		})
	}
	wg.Wait()
	close(subs)
	if len(subs) != n*len(keys) {
		t.Fatalf("%d of %d submits acknowledged", len(subs), n*len(keys))
	}
	for s := range subs {
		for range 3 {
			code, task := longPoll(t, base+"/api/v1/tasks/"+s.id, s.key)
			if code != http.StatusOK {
				t.Fatalf("poll %s: %d %v", s.id, code, task)
			}
			if task["status"] == "success" {
				break
			}
			if task["status"] == "failed" {
				t.Fatalf("task %s failed: %v", s.id, task)
			}
		}
	}
}

// imagegen migrate -redis SINGLE -redis-to CLUSTER copies a single-node
// store onto a Cluster: the owner's balance and key work there, and
// serve on the Cluster answers the owner.
func TestMigrateRedisOntoCluster(t *testing.T) {
	t.Parallel() // mostly waiting on its own servers: it overlaps the others like it
	single := redistest.StartServer(t, 0)
	src, err := redisstore.New(single.Client(t), redisstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := imagegen.New(imagegen.Config{Store: src, Model: imagegentest.NewModel(1), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	keys := failoverOwners(t, svc, 3, 7)
	c := redistest.StartCluster(t, 3)
	var out strings.Builder
	if err := run(ctx, []string{"migrate", "-redis", "redis://" + single.Addr() + "/0", "-redis-to", c.URL()}, noEnv, &out, &out); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "onto the shards") {
		t.Fatalf("migrate said %q", out.String())
	}
	_, base := startServeProcess(t, "-redis", c.URL(), "-workers", "1", "-placeholder-delay", "0")
	for owner, key := range keys {
		code, credits := httpCall(t, "GET", base+"/api/v1/credits", key, "")
		if code != http.StatusOK || credits["credits_remaining"] != 7.0 {
			t.Fatalf("%s on the Cluster: %d %v", owner, code, credits)
		}
	}
}

// lazyError is an error whose message is made only when it is written.
type lazyError func() string

func (e lazyError) Error() string { return e() }

// linesWith is the lines of out that contain s.
func linesWith(out, s string) string {
	var b strings.Builder
	for line := range strings.Lines(out) {
		if strings.Contains(line, s) {
			b.WriteString(line)
		}
	}
	return b.String()
}
