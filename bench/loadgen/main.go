// Command loadgen drives a running imagegen server over HTTP: it submits
// -n tasks from -c concurrent clients with one key, then waits for every
// task with Prefer: wait, and prints the submit rate, the answer codes,
// the tasks' end states and the key's remaining credits (which must be
// the grant minus the successful tasks). Start the server with a rate
// limit above -n and enough credits, for example
//
//	imagegen serve -addr 127.0.0.1:18081 -demo-key load-key-0123456789abcdef \
//	  -demo-credits 5000 -rate-limit 100000 -placeholder-delay 0s -workers 8
//	go run ./loadgen -server http://127.0.0.1:18081 -key load-key-0123456789abcdef
//
// Point it only at a server of your own on loopback.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	server := flag.String("server", "http://127.0.0.1:8080", "the server's base URL")
	key := flag.String("key", os.Getenv("IMAGEGEN_API_KEY"), "API key (default $IMAGEGEN_API_KEY)")
	n := flag.Int("n", 4000, "tasks to submit")
	clients := flag.Int("c", 64, "concurrent clients")
	flag.Parse()

	l := &load{
		api:     strings.TrimRight(*server, "/") + "/api/v1",
		key:     *key,
		clients: *clients,
		hc:      &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *clients}, Timeout: 90 * time.Second},
	}
	start := time.Now()
	ids := l.submitAll(*n)
	submitted := time.Since(start)
	l.waitAll(ids)
	fmt.Printf("submits: %d in %v (%.0f/s); all ended after %v\n",
		*n, submitted.Round(time.Millisecond), float64(*n)/submitted.Seconds(), time.Since(start).Round(time.Millisecond))
	l.tally.print()
	if body, err := l.get("/credits", nil); err == nil {
		fmt.Printf("credits: %s\n", body)
	}
}

// load is one run against a server.
type load struct {
	api     string // base URL with the API prefix
	key     string
	clients int
	hc      *http.Client
	tally   tally
}

// submitAll submits n tasks from l.clients goroutines and returns the
// ids of those accepted.
func (l *load) submitAll(n int) []string {
	var (
		next atomic.Int64
		mu   sync.Mutex
		ids  []string
		wg   sync.WaitGroup
	)
	for range l.clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				id, ok := l.submit()
				if ok {
					mu.Lock()
					ids = append(ids, id)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return ids
}

func (l *load) submit() (string, bool) {
	req, _ := http.NewRequest(http.MethodPost, l.api+"/generate",
		strings.NewReader(`{"scene":"text-to-image","prompt":"load test fox","aspect_ratio":"1:1"}`))
	req.Header.Set("Content-Type", "application/json")
	status, body, err := l.do(req)
	if err != nil {
		l.tally.add("submit: network error")
		return "", false
	}
	l.tally.add(fmt.Sprintf("submit: %d", status))
	var sub struct {
		TaskID string `json:"task_id"`
	}
	if status != http.StatusCreated || json.Unmarshal(body, &sub) != nil {
		return "", false
	}
	return sub.TaskID, true
}

// waitAll waits for every task with Prefer: wait, from l.clients
// goroutines, and counts how each ended.
func (l *load) waitAll(ids []string) {
	queue := make(chan string)
	var wg sync.WaitGroup
	for range l.clients {
		wg.Go(func() {
			for id := range queue {
				l.tally.add(l.wait(id))
			}
		})
	}
	for _, id := range ids {
		queue <- id
	}
	close(queue)
	wg.Wait()
}

// wait polls one task until it ends; it returns how it ended.
func (l *load) wait(id string) string {
	for {
		body, err := l.get("/tasks/"+id, http.Header{"Prefer": {"wait=30"}})
		if err != nil {
			return "poll: " + err.Error()
		}
		var t struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(body, &t); err != nil {
			return "poll: bad body"
		}
		if t.Status == "success" || t.Status == "failed" {
			return "task: " + t.Status
		}
	}
}

// get fetches path of the API and returns the body of a 200 answer.
func (l *load) get(path string, h http.Header) ([]byte, error) {
	req, _ := http.NewRequest(http.MethodGet, l.api+path, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	status, body, err := l.do(req)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("HTTP %d", status)
	}
	return body, err
}

func (l *load) do(req *http.Request) (int, []byte, error) {
	req.Header.Set("Authorization", "Bearer "+l.key)
	resp, err := l.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// tally counts outcomes by name; safe for concurrent use.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func (t *tally) add(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == nil {
		t.n = map[string]int{}
	}
	t.n[name]++
}

func (t *tally) print() {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.n))
	for name := range t.n {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Printf("%-24s %d\n", name, t.n[name])
	}
}
