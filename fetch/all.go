package fetch

import (
	"context"
	"sync"
	"time"
)

// MaxSetTime caps how long All may take for one set of fetches: a
// task's reference images are all fetched, in parallel, within it.
const MaxSetTime = 30 * time.Second

// All runs fetch(ctx, i) for every i in [0, n) at once and waits for all
// of them, within MaxSetTime of the start. Since every fetch starts at
// once, each under the fetcher's own Timeout and MinRate, a set of
// downloads takes no longer than its slowest member: Config.Timeout
// (default 15 s), however many there are. The first fetch to fail cancels
// the others; All returns its index and error, or (-1, nil) when every
// fetch succeeded.
func All(ctx context.Context, n int, fetch func(ctx context.Context, i int) error) (failed int, err error) {
	ctx, cancel := context.WithTimeout(ctx, MaxSetTime)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first = -1
		ferr  error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if e := fetch(ctx, i); e != nil {
				once.Do(func() { first, ferr = i, e; cancel() })
			}
		}()
	}
	wg.Wait()
	return first, ferr
}
