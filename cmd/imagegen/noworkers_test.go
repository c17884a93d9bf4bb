package main

import (
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/matryer/is"
)

// serve -workers 0 on the memory store takes (and charges) submits that
// no process can ever run: nothing else reaches its store. It says so at
// start, at warn level; on a shared store, where worker processes run
// them, it does not.
func TestServeWithoutWorkersOnTheMemoryStoreWarns(t *testing.T) {
	is := is.New(t)
	const warning = "no process can run"
	mem := startServe(t, nil, "-workers", "0", "-demo-key", demoKey)
	is.NoErr(mem.stop())
	is.True(strings.Contains(mem.stderr.String(), warning))

	r := miniredis.RunT(t)
	shared := startServe(t, nil, "-workers", "0", "-redis", "redis://"+r.Addr()+"/0")
	is.NoErr(shared.stop())
	is.True(!strings.Contains(shared.stderr.String(), warning))

	running := startServe(t, nil, "-demo-key", demoKey)
	is.NoErr(running.stop())
	is.True(!strings.Contains(running.stderr.String(), warning))
}
