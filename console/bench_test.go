package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/console"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// BenchmarkOperatorPage renders the operator page (counts, charts,
// providers) on a memory store holding recent tasks (created in the
// last two hours, which the page reads) beside older ones (retained,
// not read, but there for every listing to pass over).
func BenchmarkOperatorPage(b *testing.B) {
	for _, size := range []struct{ recent, older int }{{1000, 10_000}, {5000, 50_000}} {
		b.Run(fmt.Sprintf("recent=%d/older=%d", size.recent, size.older), func(b *testing.B) {
			con := operatorConsole(b, size.recent, size.older)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				con.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/ops", nil))
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// operatorConsole is a console whose every request is the operator's, on
// a memory store with older tasks submitted three hours ago and recent
// ones over the last hour (pending: no workers run).
func operatorConsole(b *testing.B, recent, older int) *console.Console {
	ctx := context.Background()
	now := time.Now()
	clock := imagegentest.NewClock(now.Add(-3 * time.Hour))
	store := testenv.Memory(b, memory.Config{Clock: clock, Retention: 24 * time.Hour})
	svc, err := imagegen.New(imagegen.Config{
		Store:  store,
		Model:  imagegentest.NewModel(1),
		Clock:  clock,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.Grant(ctx, "u", int64(recent+older), "bench"); err != nil {
		b.Fatal(err)
	}
	for i := range recent + older {
		if i == older {
			clock.Set(now.Add(-time.Hour))
		}
		if i >= older {
			clock.Advance(time.Hour / time.Duration(recent))
		}
		if _, err := svc.Submit(ctx, "u", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a cat"}); err != nil {
			b.Fatal(err)
		}
	}
	con, err := console.New(ctx, console.Config{
		Service:   svc,
		Store:     store,
		ImageURLs: func(*imagegen.Task) []string { return nil },
		Identify:  func(*http.Request) (string, bool, error) { return "ops", true, nil },
		Clock:     clock,
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	return con
}
