package replicate

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"
)

// The headers that depend on the time left are worked out for each try,
// from the deadline then, not once before the first.
func TestTimeLeftHeadersAreWorkedOutPerTry(t *testing.T) {
	is := is.New(t)
	post := func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/v1/predictions", nil)
	}
	build := withTimeLeft(post, MaxSyncWait)
	for _, tc := range []struct {
		left         time.Duration
		prefer, stop string
	}{
		{90 * time.Second, "wait=60", "90s"}, // at most the API's 60 s
		{40*time.Second + 500*time.Millisecond, "wait=35", "41s"},
		{20*time.Second + 500*time.Millisecond, "wait=15", "21s"}, // a later try, with less time left
		{5*time.Second + 500*time.Millisecond, "", "6s"},          // too little to wait: poll only
	} {
		ctx, cancel := context.WithTimeout(context.Background(), tc.left)
		req, err := build(ctx)
		cancel()
		is.NoErr(err)
		is.Equal(req.Header.Get("Prefer"), tc.prefer)
		is.Equal(req.Header.Get("Cancel-After"), tc.stop)
	}
}
