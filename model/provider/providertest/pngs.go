package providertest

import (
	"sync"

	"github.com/imagegen/imagegen/model/provider"
)

// PNGs hands out PNG(w, h) for a fake's answers, encoding each size only
// once (encoding is the slow part of a fake that answers many calls).
// The zero value is ready to use; it is safe for concurrent use.
type PNGs struct {
	mu     sync.Mutex
	bySize map[provider.Size][]byte
}

// Of returns a PNG of size s.
func (p *PNGs) Of(s provider.Size) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.bySize[s]; ok {
		return b
	}
	if p.bySize == nil {
		p.bySize = map[provider.Size][]byte{}
	}
	b := PNG(s.W, s.H)
	p.bySize[s] = b
	return b
}
