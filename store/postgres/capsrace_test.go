package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// Concurrent claims of batches that span several models keep the owner
// cap, each model's cap and a model's rate across them all (migration
// 20's merge: a model's cap and rate decided once per claim, the owner
// cap per task), and never hand out one task twice.
func TestConcurrentClaimsKeepCapsAcrossModels(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Connect(t)
	s := pgtest.NewStore(t, pool, postgres.Config{Retention: time.Hour, SweepInterval: -1})
	owners := []string{"o0", "o1", "o2", "o3", "o4"}
	models := []string{"m0", "m1", "m2", "m3"}
	for _, o := range owners {
		if _, err := s.AddEntry(ctx, imagegen.LedgerEntry{Owner: o, Kind: imagegen.LedgerGrant, Amount: 1000, Ref: "g"}); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		task := newTask(fmt.Sprintf("t%03d", i), owners[rng.IntN(len(owners))])
		task.Model = models[rng.IntN(len(models))]
		if _, err := s.CreateTask(ctx, task, imagegen.CreateParams{}); err != nil {
			t.Fatal(err)
		}
	}
	const ownerCap, rateEvery = 2, 100 * time.Millisecond
	caps := map[string]int{"m0": 3, "m1": 2, "m2": 4}
	l := imagegen.Limits{OwnerConcurrency: ownerCap, ModelConcurrency: caps,
		ModelRate: map[string]int{"m1": int(time.Minute / rateEvery), "m3": int(time.Minute / rateEvery)}}
	schema := pgx.Identifier{s.Schema()}.Sanitize()

	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	starts := map[string][]time.Time{}
	holder := map[string]int{} // task: attempt claimed and not yet released
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				claimed, err := s.ClaimTasks(ctx, imagegen.ClaimParams{Lease: time.Minute, N: 1 + r.IntN(6), Limits: l})
				if errors.Is(err, imagegen.ErrNoTask) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					fail("claim: %v", err)
					return
				}
				mu.Lock()
				for _, c := range claimed {
					if _, ok := holder[c.ID]; ok {
						failures = append(failures, fmt.Sprintf("%s claimed twice", c.ID))
					}
					holder[c.ID] = c.Attempt
					if c.Model == "m1" || c.Model == "m3" {
						starts[c.Model] = append(starts[c.Model], c.UpdatedAt)
					}
				}
				mu.Unlock()
				time.Sleep(time.Duration(r.IntN(4)) * time.Millisecond)
				for _, c := range claimed {
					mu.Lock()
					delete(holder, c.ID)
					mu.Unlock()
					if err := s.ReleaseTask(ctx, c.ID, c.Attempt); err != nil {
						fail("release %s: %v", c.ID, err)
					}
				}
			}
		}()
	}
	// The checker: what runs, in one snapshot, is within the caps.
	wg.Add(1)
	checks := 0
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			rows, err := pool.Query(ctx, fmt.Sprintf(`SELECT 'o:' || owner, count(*) FROM %[1]s.tasks
				WHERE status = 'processing' AND lease_until > now() GROUP BY owner
				UNION ALL SELECT 'm:' || model, count(*) FROM %[1]s.tasks
				WHERE status = 'processing' AND lease_until > now() GROUP BY model`, schema))
			if err != nil {
				fail("check: %v", err)
				return
			}
			for rows.Next() {
				var k string
				var n int
				if err := rows.Scan(&k, &n); err != nil {
					fail("check: %v", err)
				}
				if k[0] == 'o' && n > ownerCap {
					fail("%s runs %d tasks, cap %d", k, n, ownerCap)
				}
				if c, ok := caps[k[2:]]; k[0] == 'm' && ok && n > c {
					fail("%s runs %d tasks, cap %d", k, n, c)
				}
			}
			rows.Close()
			checks++
		}
	}()
	// Two seconds of claims, and on until each rated model has started
	// five times (its rate lets starts through), or 30 s: a loaded
	// machine's speed is no measure of the rate.
	begin := time.Now()
	for time.Since(begin) < 30*time.Second {
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		enough := len(starts["m1"]) >= 5 && len(starts["m3"]) >= 5
		mu.Unlock()
		if enough && time.Since(begin) >= 2*time.Second {
			break
		}
	}
	close(stop)
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	for m, ts := range starts {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); d < rateEvery {
				t.Errorf("%s started twice %v apart (rate: one every %v)", m, d, rateEvery)
			}
		}
		if len(ts) < 5 {
			t.Errorf("%s started %d times in %v", m, len(ts), time.Since(begin).Round(time.Second))
		}
	}
	t.Logf("starts: m1 %d, m3 %d; %d checks", len(starts["m1"]), len(starts["m3"]), checks)
}
