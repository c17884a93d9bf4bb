package providertest

import (
	"net/http"
	"time"
)

// Drip is an image host like a slowloris: it answers 200 with an
// image/png type at once, then sends one byte every 20 ms, for at most
// 4 s or until the client goes away. Serve it on a loopback
// httptest.Server to test the fetch deadlines of reference images.
func Drip(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "image/png")
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	for range 200 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
		if _, err := w.Write([]byte{0}); err != nil {
			return
		}
		_ = rc.Flush()
	}
}
