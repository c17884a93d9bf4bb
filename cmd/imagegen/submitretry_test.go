package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/wire"
)

// keyInUseServer answers the first busy submits 409
// idempotency_key_in_use, then 201, and records the keys it was sent.
type keyInUseServer struct {
	busy int
	mu   sync.Mutex
	keys []string
}

func (s *keyInUseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
	n := len(s.keys)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if n <= s.busy {
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(wire.ErrorBody{Error: wire.ErrorDetail{Code: wire.APIIdempotencyKeyInUse, Message: "still in progress"}})
		return
	}
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(wire.Submitted{TaskID: "t-1", Status: imagegen.StatusPending, CreditsUsed: 1, CreditsRemaining: 9})
}

// submitAgainst runs submitter.submit against srv with pauses that do
// not wait, and returns what it answered, the pauses and its stderr.
func submitAgainst(t *testing.T, srv http.Handler) (wire.Submitted, error, []time.Duration, string) {
	t.Helper()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	api, err := client.New(ts.URL, "a-key-of-sixteen-chars")
	if err != nil {
		t.Fatal(err)
	}
	var pauses []time.Duration
	var stderr bytes.Buffer
	s := submitter{api: api, stderr: &stderr, sleep: func(ctx context.Context, d time.Duration) error {
		pauses = append(pauses, d)
		return ctx.Err()
	}}
	sub, err := s.submit(t.Context(), imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a fox"})
	return sub, err, pauses, stderr.String()
}

// While the server still settles an earlier try of the key (a store
// error of unknown outcome keeps it in flight for two minutes), generate
// asks again with the same key until it is settled, instead of giving up
// after three tries and leaving the user a key only it knew.
func TestSubmitAsksAgainWhileTheKeyIsSettled(t *testing.T) {
	is := is.New(t)
	srv := &keyInUseServer{busy: 10}
	sub, err, pauses, stderr := submitAgainst(t, srv)
	is.NoErr(err)
	is.Equal(sub.TaskID, "t-1")
	is.Equal(len(srv.keys), 11)
	for _, k := range srv.keys {
		is.Equal(k, srv.keys[0]) // one key for every try
	}
	is.Equal(len(pauses), 10)
	is.True(strings.Contains(stderr, "still settling an earlier try"))
}

// The asking again is bounded: a key still in use after settleWait ends
// the command with the server's answer.
func TestSubmitStopsAskingAfterSettleWait(t *testing.T) {
	is := is.New(t)
	srv := &keyInUseServer{busy: 1 << 20}
	_, err, pauses, _ := submitAgainst(t, srv)
	is.True(errors.Is(err, client.ErrIdempotencyKeyInUse))
	var waited time.Duration
	for _, p := range pauses {
		waited += p
	}
	is.Equal(waited, settleWait)
}
