package providertest

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Fetcher serves images from a map by URL and records what it was
// asked. A URL not in the map fails with Err (or a generic error).
type Fetcher struct {
	mu     sync.Mutex
	Images map[string]Image
	Err    error
	asked  []string
}

// Image is one answer of Fetcher.
type Image struct {
	Data        []byte
	ContentType string
	Err         error
}

// Fetch returns the image for url.
func (f *Fetcher) Fetch(ctx context.Context, url string) ([]byte, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, url)
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	img, ok := f.Images[url]
	switch {
	case ok && img.Err != nil:
		return nil, "", img.Err
	case ok:
		return img.Data, img.ContentType, nil
	case f.Err != nil:
		return nil, "", f.Err
	}
	return nil, "", fmt.Errorf("unexpected HTTP status 404")
}

// Add serves img at url from now on.
func (f *Fetcher) Add(url string, img Image) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Images == nil {
		f.Images = map[string]Image{}
	}
	f.Images[url] = img
}

// Asked returns the URLs fetched so far, sorted: a task's references are
// fetched in parallel, so the order they were asked in means nothing.
func (f *Fetcher) Asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(slices.Values(f.asked))
}
