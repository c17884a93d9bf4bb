package wire_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen/wire"
)

// The test vector of the Standard Webhooks specification.
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var vectorTime = time.Unix(1614265330, 0)

func TestSignMatchesTheStandardWebhooksVector(t *testing.T) {
	is := is.New(t)
	sig, err := wire.Sign(vectorSecret, vectorID, vectorTime, []byte(vectorBody))
	is.NoErr(err)
	is.Equal(sig, vectorSig)
}

func TestVerify(t *testing.T) {
	is := is.New(t)
	h, err := wire.Headers(vectorSecret, vectorID, vectorTime, []byte(vectorBody))
	is.NoErr(err)
	is.NoErr(wire.Verify(vectorSecret, h, []byte(vectorBody), vectorTime.Add(time.Minute), wire.DefaultTolerance))

	// A tampered body, another secret, an old or future message, no headers.
	is.True(errors.Is(wire.Verify(vectorSecret, h, []byte(`{"test": 2432232315}`), vectorTime, wire.DefaultTolerance), wire.ErrInvalidSignature))
	is.True(errors.Is(wire.Verify("whsec_"+"c2VjcmV0LXNlY3JldA==", h, []byte(vectorBody), vectorTime, wire.DefaultTolerance), wire.ErrInvalidSignature))
	is.True(errors.Is(wire.Verify(vectorSecret, h, []byte(vectorBody), vectorTime.Add(6*time.Minute), wire.DefaultTolerance), wire.ErrTimestamp))
	is.True(errors.Is(wire.Verify(vectorSecret, h, []byte(vectorBody), vectorTime.Add(-6*time.Minute), wire.DefaultTolerance), wire.ErrTimestamp))
	is.True(errors.Is(wire.Verify(vectorSecret, http.Header{}, []byte(vectorBody), vectorTime, wire.DefaultTolerance), wire.ErrMissingHeaders))
	is.True(errors.Is(wire.Verify("not-a-secret", h, []byte(vectorBody), vectorTime, wire.DefaultTolerance), wire.ErrBadSecret))

	// Several signatures (a secret rotation): one valid is enough.
	h.Set(wire.HeaderSignature, "v1,bm90IGl0 "+vectorSig)
	is.NoErr(wire.Verify(vectorSecret, h, []byte(vectorBody), vectorTime, wire.DefaultTolerance))
	h.Set(wire.HeaderSignature, "v2,"+vectorSig[3:])
	is.True(errors.Is(wire.Verify(vectorSecret, h, []byte(vectorBody), vectorTime, wire.DefaultTolerance), wire.ErrInvalidSignature))
}

// TestSignedHeadersSignWithEachSecret: during a rotation the header
// carries a signature per secret, in their order, and a receiver with
// either secret verifies.
func TestSignedHeadersSignWithEachSecret(t *testing.T) {
	is := is.New(t)
	const other = "whsec_c2VjcmV0LXNlY3JldA=="
	h, err := wire.SignedHeaders([]string{other, vectorSecret}, vectorID, vectorTime, []byte(vectorBody))
	is.NoErr(err)
	otherSig, err := wire.Sign(other, vectorID, vectorTime, []byte(vectorBody))
	is.NoErr(err)
	is.Equal(h.Get(wire.HeaderSignature), otherSig+" "+vectorSig)
	is.Equal(h.Get(wire.HeaderID), vectorID)
	is.Equal(h.Get(wire.HeaderTimestamp), "1614265330")
	for _, secret := range []string{other, vectorSecret} {
		is.NoErr(wire.Verify(secret, h, []byte(vectorBody), vectorTime, wire.DefaultTolerance))
	}

	one, err := wire.SignedHeaders([]string{vectorSecret}, vectorID, vectorTime, []byte(vectorBody))
	is.NoErr(err)
	is.Equal(one.Get(wire.HeaderSignature), vectorSig) // one secret: as Headers

	_, err = wire.SignedHeaders(nil, vectorID, vectorTime, []byte(vectorBody))
	is.True(errors.Is(err, wire.ErrBadSecret))
	_, err = wire.SignedHeaders([]string{vectorSecret, "not-a-secret"}, vectorID, vectorTime, []byte(vectorBody))
	is.True(errors.Is(err, wire.ErrBadSecret))
}
