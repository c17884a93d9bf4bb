package httpapi_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/apitest"
	"github.com/imagegen/imagegen/wire"
)

// BenchmarkResultLatency measures the time from a task's success to the
// client seeing it, over loopback HTTP on the real clock: with one
// long poll (Prefer: wait=30) and with polling every 5 s as the
// interface's example does. Report the latency-ms metric; the polling
// case takes about 5 s per iteration, so run it with -benchtime=6x.
func BenchmarkResultLatency(b *testing.B) {
	b.Run("prefer-wait", func(b *testing.B) { benchLatency(b, 0) })
	b.Run("poll-every-5s", func(b *testing.B) { benchLatency(b, 5*time.Second) })
}

func benchLatency(b *testing.B, pollEvery time.Duration) {
	s := apitest.New(b, apitest.Config{Model: imagegentest.NewModel(1), Limit: 1 << 20})
	svc, model := s.Service, s.Model
	srv := httptest.NewServer(s.Mux)
	defer srv.Close()
	ctx := context.Background()
	if _, err := svc.ImportKey(ctx, "u", benchKey); err != nil {
		b.Fatal(err)
	}
	if _, err := svc.Grant(ctx, "u", int64(b.N)+1, uuid.NewString()); err != nil {
		b.Fatal(err)
	}
	get := func(id, prefer string) string {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/tasks/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+benchKey)
		if prefer != "" {
			req.Header.Set("Prefer", prefer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var t wire.TaskBody
		if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
			b.Fatal(err)
		}
		return string(t.Status)
	}

	var total time.Duration
	b.ResetTimer()
	for range b.N {
		started, release := make(chan struct{}), make(chan struct{})
		model.Then(imagegentest.Block(started, release))
		sub, err := svc.Submit(ctx, "u", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"})
		if err != nil {
			b.Fatal(err)
		}
		go func() { _, _ = svc.RunOnce(ctx) }()
		<-started

		seen := make(chan time.Time, 1)
		if pollEvery == 0 {
			go func() {
				if st := get(sub.TaskID, "wait=30"); !strings.EqualFold(st, "success") {
					b.Errorf("long poll ended with %s", st)
				}
				seen <- time.Now()
			}()
			time.Sleep(5 * time.Millisecond) // let the long poll reach the server first
		} else {
			// A client polling every pollEvery, at a phase of its own.
			phase := time.Duration(rand.Int64N(int64(pollEvery)))
			go func() {
				time.Sleep(phase)
				for get(sub.TaskID, "") != "success" {
					time.Sleep(pollEvery)
				}
				seen <- time.Now()
			}()
			time.Sleep(pollEvery / 2)
		}
		succeeded := time.Now()
		close(release)
		total += (<-seen).Sub(succeeded)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "latency-ms")
}
