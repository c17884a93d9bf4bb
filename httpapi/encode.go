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

// userJSON is the shape of every handler that answers the authenticated
// user: answer works out the body for the user's owner, and the handler
// writes it as JSON with status, or, when answer fails, the error answer.
// answer may set headers of a successful answer on w.
func userJSON[T any](h *Handler, status int, answer func(w http.ResponseWriter, r *http.Request, owner string) (T, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		body, err := answer(w, r, p.Owner)
		if err != nil {
			h.respondErr(w, r, err)
			return
		}
		encode(w, status, body)
	})
}

var (
	jsonContentType = []string{"application/json"}
	nosniff         = []string{"nosniff"}
)
