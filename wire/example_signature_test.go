package wire_test

import (
	"fmt"
	"time"

	"github.com/imagegen/imagegen/wire"
)

// A receiver checks each callback before trusting it.
func ExampleVerify() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // GET /api/v1/webhook-secret
	body := []byte(`{"task_id":"3f0c","status":"success","images":["https://img.example.com/a.png"]}`)
	sent := time.Unix(1767312245, 0)
	header, _ := wire.Headers(secret, "msg_3f0c", sent, body) // what the server sends

	fmt.Println(wire.Verify(secret, header, body, sent.Add(2*time.Second), wire.DefaultTolerance))
	fmt.Println(wire.Verify(secret, header, []byte(`{"task_id":"3f0c","status":"failed"}`), sent, wire.DefaultTolerance))
	// Output:
	// <nil>
	// webhook: no valid signature
}
