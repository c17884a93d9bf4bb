package httpapi

import (
	"encoding/json"
	"net/http"
)

// encode writes v as the JSON body of a response with the given status.
func encode[T any](w http.ResponseWriter, status int, v T) {
	body, err := json.Marshal(v)
	if err != nil { // only our own response types reach here
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal_error","message":"internal server error"}}`)
	}
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["X-Content-Type-Options"] = nosniff
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

var (
	jsonContentType = []string{"application/json"}
	nosniff         = []string{"nosniff"}
)
