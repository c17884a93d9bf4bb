package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/matryer/is"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/imagegen/imagegen/internal/testenv"
)

// adminURL waits for the server's start line and returns its admin=
// address.
func adminURL(t *testing.T, logs *syncBuffer) string {
	t.Helper()
	re := regexp.MustCompile(`"?admin"?[=:]"?(http://127\.0\.0\.1:\d+)`)
	m := re.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no admin address in the logs:\n%s", logs)
	}
	return m[1]
}

// scrape reads /metrics and returns its text and its parsed families.
func scrape(t *testing.T, admin string) ([]byte, map[string]*dto.MetricFamily) {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	is.New(t).NoErr(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	is.New(t).NoErr(err)
	is.New(t).Equal(resp.StatusCode, http.StatusOK)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	is.New(t).NoErr(err)
	return body, families
}

// value is the sample of family name with exactly these labels (0 when
// there is none): a counter's or gauge's value, a histogram's count.
func value(families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range f.Metric {
		if len(m.Label) != len(want) {
			continue
		}
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// sum adds every sample of a counter family.
func sum(families map[string]*dto.MetricFamily, name string) float64 {
	total := 0.0
	if f := families[name]; f != nil {
		for _, m := range f.Metric {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// doRequest sends one API request (with an X-Request-Id unless
// requestID is "") and returns the status, the decoded JSON answer and
// the echoed request id.
func doRequest(t *testing.T, method, url, key, body, requestID string) (int, map[string]any, string) {
	t.Helper()
	code, m, id, err := sendRequest(method, url, key, body, requestID)
	is.New(t).NoErr(err)
	return code, m, id
}

// sendRequest is doRequest returning its error instead of failing the
// test, for goroutines other than the test's.
func sendRequest(method, url, key, body, requestID string) (int, map[string]any, string, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if requestID != "" {
		req.Header.Set("X-Request-Id", requestID)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return 0, nil, "", fmt.Errorf("%s %s: %d answer: %w", method, url, resp.StatusCode, err)
	}
	return resp.StatusCode, m, resp.Header.Get("X-Request-Id"), nil
}

// TestOperatedRun is a whole scripted session: 5 tasks (3 succeed, 1 is
// refused, 1 is cancelled) and 2 rate-limited requests. Its /metrics on
// -admin-addr show exactly those counts, promtool (when installed)
// accepts the scrape, and its JSON logs hold no secret and a request id
// on every request line.
func TestOperatedRun(t *testing.T) {
	is := is.New(t)
	const (
		userKey     = "operated-run-user-key-0123456789"
		busyKey     = "operated-run-busy-key-9876543210"
		signingKey  = "operated-run-signing-key-abcdefghij"
		providerKey = "sk-operated-run-provider-key-zyxwvu"
	)
	env := map[string]string{
		"IMAGEGEN_PLACEHOLDER_DELAY": "150ms",
		"OPENAI_API_KEY":             providerKey,
		"OPENAI_BASE_URL":            "http://127.0.0.1:1", // the chain never gets that far
	}
	s := startServe(t, env, "-demo-key", userKey, "-demo-key", busyKey, "-demo-credits", "10",
		"-rate-limit", "12", "-signing-key", signingKey, "-workers", "1", "-model", "placeholder,openai",
		"-admin-addr", "127.0.0.1:0", "-log-format", "json")
	admin := adminURL(t, s.stderr)
	api := s.base + "/api/v1"

	submit := func(prompt, rid string) string {
		t.Helper()
		code, m, echoed := doRequest(t, "POST", api+"/generate", userKey, `{"scene":"text-to-image","prompt":"`+prompt+`"}`, rid)
		is.Equal(code, http.StatusCreated)
		if rid != "" {
			is.Equal(echoed, rid) // a valid incoming id is kept
		} else {
			is.True(len(echoed) == 32) // else one is made
		}
		return m["task_id"].(string)
	}
	ok1 := submit("a lighthouse", "run-req-0001")
	cancelled := submit("a fox", "")
	code, _, _ := doRequest(t, "POST", api+"/tasks/"+cancelled+"/cancel", userKey, "", "")
	is.Equal(code, http.StatusOK)
	refused := submit("nsfw please", "")
	ok2 := submit("a harbour", "")
	ok3 := submit("a hill", "")
	wait := func(id string) string {
		t.Helper()
		_, m := longPoll(t, api+"/tasks/"+id, userKey)
		return m["status"].(string)
	}
	for _, id := range []string{ok1, ok2, ok3} {
		is.Equal(wait(id), "success")
	}
	is.Equal(wait(refused), "failed")
	// 5 submits, a cancel and 4 waits of userKey: within its 12. busyKey
	// spends its 12 and is refused twice.
	for range 12 {
		code, _, _ := doRequest(t, "GET", api+"/credits", busyKey, "", "")
		is.Equal(code, http.StatusOK)
	}
	for range 2 {
		code, _, _ := doRequest(t, "GET", api+"/credits", busyKey, "", "")
		is.Equal(code, http.StatusTooManyRequests)
	}

	// A finish is counted once the store has it, so a poll may see a
	// task succeed a moment before its finish is counted: wait for all
	// five finishes, then check each count exactly.
	var text []byte
	var m map[string]*dto.MetricFamily
	testenv.Eventually(t, time.Minute, "five finishes counted", func() bool {
		text, m = scrape(t, admin)
		return sum(m, "imagegen_tasks_finished_total") >= 5
	})
	const chain = "placeholder,openai"
	is.Equal(value(m, "imagegen_tasks_submitted_total", "scene", "text-to-image", "model", chain), 5.0)
	is.Equal(sum(m, "imagegen_tasks_submitted_total"), 5.0)
	is.Equal(value(m, "imagegen_tasks_finished_total", "model", chain, "status", "success", "error_code", ""), 3.0)
	is.Equal(value(m, "imagegen_tasks_finished_total", "model", chain, "status", "failed", "error_code", "content_policy"), 1.0)
	is.Equal(value(m, "imagegen_tasks_finished_total", "model", chain, "status", "failed", "error_code", "cancelled"), 1.0)
	is.Equal(sum(m, "imagegen_tasks_finished_total"), 5.0)
	is.Equal(value(m, "imagegen_rate_limited_total"), 2.0)
	is.Equal(value(m, "imagegen_credits_charged_total"), 5.0)
	// Four tasks were claimed; the cancelled one too if a worker took it
	// before the cancel (then its call ended "cancelled", and the
	// cancel, its owner's, kept its charge: only the refusal refunded).
	claimedThenCancelled := value(m, "imagegen_provider_requests_total", "provider", "placeholder", "outcome", "cancelled")
	is.Equal(value(m, "imagegen_credits_refunded_total"), 2-claimedThenCancelled)
	is.Equal(value(m, "imagegen_provider_requests_total", "provider", "placeholder", "outcome", "success"), 3.0)
	is.Equal(value(m, "imagegen_provider_requests_total", "provider", "placeholder", "outcome", "refused"), 1.0)
	is.Equal(sum(m, "imagegen_provider_fallbacks_total"), 0.0) // a refusal is not passed on
	is.Equal(value(m, "imagegen_http_requests_total", "route", "POST /api/v1/generate", "code", "201"), 5.0)
	is.Equal(value(m, "imagegen_http_requests_total", "route", "GET /api/v1/credits", "code", "429"), 2.0)
	is.Equal(value(m, "imagegen_http_requests_total", "route", "GET /api/v1/credits", "code", "200"), 12.0)
	is.Equal(value(m, "imagegen_http_request_seconds", "route", "POST /api/v1/tasks/{task_id}/cancel"), 1.0)
	is.Equal(value(m, "imagegen_task_queue_wait_seconds"), 4+claimedThenCancelled)
	is.Equal(value(m, "imagegen_task_generation_seconds"), 4.0) // the finishes that ran a generation
	is.Equal(value(m, "imagegen_queue_depth", "status", "pending"), 0.0)
	is.Equal(value(m, "imagegen_queue_depth", "status", "processing"), 0.0)
	is.True(m["imagegen_queue_oldest_pending_seconds"] != nil)
	is.True(m["go_goroutines"] != nil)                 // Go collector
	is.True(m["process_resident_memory_bytes"] != nil) // process collector
	for _, key := range []string{userKey, busyKey, "demo-1", "demo-2", ok1} {
		is.True(!bytes.Contains(text, []byte(key))) // no user, key or task id as a label
	}

	t.Run("promtool check metrics", func(t *testing.T) {
		promtool, err := exec.LookPath(cmp.Or(os.Getenv("IMAGEGEN_TEST_PROMTOOL"), "promtool"))
		if err != nil {
			t.Skip("IMAGEGEN_TEST_PROMTOOL is not set and promtool is not on PATH (Debian package prometheus); the scrape's own checks above ran")
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool check metrics: %v\n%s", err, out)
		}
	})

	is.NoErr(s.stop())
	checkLogs(t, s.stderr.String(), []string{userKey, busyKey, signingKey, providerKey}, 24, ok1, "run-req-0001") // 5 submits, a cancel, 4 waits, 14 credits
}

// checkLogs asserts that no secret is in the logs, that each of
// wantRequests API requests was logged once with a request id, and that task id's life is logged with the
// request id that submitted it, from its submit's request line on.
func checkLogs(t *testing.T, logs string, secrets []string, wantRequests int, taskID, requestID string) {
	t.Helper()
	is := is.New(t)
	for _, secret := range secrets {
		is.True(!strings.Contains(logs, secret)) // a secret is in the logs
		is.True(!strings.Contains(logs, secret[:16]))
	}
	requests, lifeLines := 0, map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("a log line is not JSON: %q", sc.Text())
		}
		if line["msg"] == "request" {
			requests++
			id, _ := line["request_id"].(string)
			is.True(id != "") // every request line has a request id
			for _, field := range []string{"method", "route", "status", "duration", "key_id"} {
				_, ok := line[field]
				is.True(ok) // a request line lacks a field
			}
		}
		if line["task_id"] == taskID {
			is.Equal(line["request_id"], requestID) // the task's life carries its request id
			lifeLines[line["msg"].(string)] = true
		}
	}
	is.Equal(requests, wantRequests) // each API request logged once
	// serve's submit is logged on its request line (msg=request with the
	// task_id), not on a "task submitted" line of the service's too.
	is.True(!lifeLines["task submitted"])
	for _, msg := range []string{"request", "task claimed", "provider answered", "task succeeded"} {
		is.True(lifeLines[msg]) // a step of the task's life was not logged
	}
}

// probe answers the status of a GET.
func probe(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestReadyzFollowsTheStore: /readyz on the admin listener and on the
// API port answers 503 from the first probe after Redis (an in-process
// miniredis on a loopback port) has gone away, and 200 again once it is
// back, with no restart; /healthz stays 200 throughout. The admin
// listener names what is down and how in a word, never the error's text
// (it may hold host names or parts of a URL): that is in the log.
func TestReadyzFollowsTheStore(t *testing.T) {
	is := is.New(t)
	r := miniredis.RunT(t)
	redisAddr := r.Addr()
	s := startServe(t, nil, "-redis", "redis://"+redisAddr+"/0", "-demo-key", demoKey, "-admin-addr", "127.0.0.1:0")
	admin := adminURL(t, s.stderr)
	for _, base := range []string{admin, s.base} {
		is.Equal(probe(t, base+"/readyz"), http.StatusOK)
		is.Equal(probe(t, base+"/healthz"), http.StatusOK)
	}

	r.Close()
	is.Equal(probe(t, admin+"/readyz"), http.StatusServiceUnavailable) // the first probe after it went away
	resp, err := http.Get(admin + "/readyz")
	is.NoErr(err)
	raw, err := io.ReadAll(resp.Body)
	is.NoErr(err)
	_ = resp.Body.Close()
	var body struct {
		Down   []string          `json:"down"`
		Checks map[string]string `json:"checks"`
		Errors map[string]string `json:"errors"`
	}
	is.NoErr(json.Unmarshal(raw, &body))
	is.Equal(body.Down, []string{"store"}) // names what is down
	is.Equal(body.Checks["store"], "connection refused")
	if body.Errors != nil || strings.Contains(string(raw), redisAddr) {
		t.Errorf("the admin /readyz shows the store's error: %s", raw)
	}
	if logs := s.stderr.String(); !strings.Contains(logs, "not ready") || !strings.Contains(logs, redisAddr) {
		t.Errorf("the store's error is not in the log:\n%s", logs)
	}
	is.Equal(probe(t, s.base+"/readyz"), http.StatusServiceUnavailable)
	is.Equal(probe(t, admin+"/healthz"), http.StatusOK) // liveness touches nothing

	is.NoErr(r.Restart()) // on the same address, with its data
	testenv.Eventually(t, 10*time.Second, "/readyz answers 200 again", func() bool {
		return probe(t, admin+"/readyz") == http.StatusOK && probe(t, s.base+"/readyz") == http.StatusOK
	})
}

// A worker process answers its probes and serves its metrics (and,
// with -pprof, the profiler, but not the command line) on -admin-addr;
// serve serves no profiler without -pprof.
func TestWorkerAdminListener(t *testing.T) {
	is := is.New(t)
	r := miniredis.RunT(t) // the worker process reaches it on loopback
	w := startImagegen(t, "worker", "-redis", "redis://"+r.Addr()+"/0", "-admin-addr", "127.0.0.1:0", "-pprof", "-log-format", "json")
	var admin string
	testenv.Eventually(t, 20*time.Second, "the worker prints its admin address", func() bool {
		m := regexp.MustCompile(`"admin":"(http://127\.0\.0\.1:\d+)"`).FindStringSubmatch(w.Output())
		if m != nil {
			admin = m[1]
		}
		return m != nil
	})
	is.True(strings.Contains(w.Output(), `"lease":"30s"`)) // a duration, as the text format writes it
	is.Equal(probe(t, admin+"/healthz"), http.StatusOK)
	is.Equal(probe(t, admin+"/readyz"), http.StatusOK)
	is.Equal(probe(t, admin+"/debug/pprof/"), http.StatusOK)
	is.Equal(probe(t, admin+"/debug/pprof/cmdline"), http.StatusNotFound) // the command line may hold secrets
	_, m := scrape(t, admin)
	is.True(m["imagegen_queue_depth"] != nil && m["go_goroutines"] != nil)
	w.stop(t)

	s := startServe(t, nil, "-admin-addr", "127.0.0.1:0")
	is.Equal(probe(t, adminURL(t, s.stderr)+"/debug/pprof/"), http.StatusNotFound)
	is.Equal(probe(t, s.base+"/debug/pprof/"), http.StatusNotFound)
}

// Both log formats write a duration as a Go duration string.
func TestLogDurationsAreStrings(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			is := is.New(t)
			var b bytes.Buffer
			log, _ := opsConfig{logFormat: format, logLevel: "info"}.logger(&b) // -log-flush 0: unbuffered
			log.Info("m", "lease", 30*time.Second, "took", 1520*time.Microsecond)
			is.True(strings.Contains(b.String(), "30s"))
			is.True(strings.Contains(b.String(), "1.52ms"))
			is.True(!strings.Contains(b.String(), "30000000000"))
		})
	}
}
