package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// encode writes v as the JSON body of a response with the given status.
// "&", "<" and ">" are written as they are (not as \u0026 and so on), so
// image URLs read the same in the body as in a browser.
func encode[T any](w http.ResponseWriter, status int, v T) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	body := buf.Bytes()
	if err := enc.Encode(v); err != nil { // only our own response types reach here
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal_error","message":"internal server error"}}`)
	} else {
		body = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
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
