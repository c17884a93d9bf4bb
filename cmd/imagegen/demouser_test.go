package main

import (
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// On a shared store, serve without -demo-key makes no demo user: it
// used to mint a new API key of "demo" (with -demo-credits) at every
// start of every process, none ever revoked, and print it on stdout,
// where a deployment's log collector keeps it. On the memory store
// (the quickstart) it still makes one.
func TestServeOnASharedStoreMakesNoDemoKey(t *testing.T) {
	is := is.New(t)
	r := miniredis.RunT(t)
	redisURL := "redis://" + r.Addr() + "/0"
	for range 2 { // two starts, as a restart or a second process
		s := startServe(t, nil, "-redis", redisURL, "-workers", "0")
		is.NoErr(s.stop())
		if out := s.stdout.String(); strings.Contains(out, imagegen.APIKeyPrefix) {
			t.Errorf("serve on Redis printed a key:\n%s", out)
		}
	}
	is.NoErr(withService(ctx, storeFlags{redisURL: redisURL}, func(svc *imagegen.Service) error {
		keys, err := svc.Keys(ctx, "demo")
		if err != nil {
			return err
		}
		if len(keys) != 0 {
			t.Errorf("the shared store has %d keys of demo, want none", len(keys))
		}
		return nil
	}))

	mem := startServe(t, nil, "-workers", "0")
	is.NoErr(mem.stop())
	is.True(strings.Contains(mem.stdout.String(), imagegen.APIKeyPrefix)) // the quickstart's key
}
