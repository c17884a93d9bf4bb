package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/imagegen/imagegen/fetch"
)

// The guard refuses loopback addresses unless AllowPrivate is set.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(pngOf(64, 36))
	}))
	defer srv.Close()

	guarded, _ := fetch.New(fetch.Config{})
	_, _, err := guarded.Image(context.Background(), srv.URL+"/ref.png")
	fmt.Println(errors.Is(err, fetch.ErrBlockedAddress))

	dev, _ := fetch.New(fetch.Config{AllowPrivate: true})
	img, format, err := dev.Image(context.Background(), srv.URL+"/ref.png")
	fmt.Println(format, img.Bounds().Dx(), img.Bounds().Dy(), err)
	// Output:
	// true
	// png 64 36 <nil>
}
