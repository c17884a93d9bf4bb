package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
)

// encode writes v as the JSON body of a response with the given status,
// ending with a newline (as curl users and line-based tools expect).
// "&", "<" and ">" are written as they are (not as \u0026 and so on), so
// image URLs read the same in the body as in a browser.
func encode[T any](w http.ResponseWriter, status int, v T) {
	e := encoders.Get().(*encoder)
	defer e.release()
	body, ok := appendFast(e.fast[:0], &v) // the hot paths' answers, without reflection
	e.fast = body
	if !ok {
		if err := e.enc.Encode(v); err != nil { // only our own response types reach here
			status = http.StatusInternalServerError
			body = []byte(`{"error":{"code":"internal_error","message":"internal server error"}}` + "\n")
		} else {
			body = e.buf.Bytes()
		}
	}
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["X-Content-Type-Options"] = nosniff
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// encoder is a buffer with a JSON encoder writing to it, kept for reuse
// (every answer is encoded through one).
type encoder struct {
	buf  bytes.Buffer
	enc  *json.Encoder
	fast []byte // appendFast's buffer
}

// encoders keeps encoders between answers: a cache of buffers, no state
// (sync.Pool, as net/http and encoding/json keep theirs).
var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// maxKeptEncoder is the largest buffer kept for reuse: a rare large
// answer (a long task list) does not stay in memory.
const maxKeptEncoder = 64 << 10

func (e *encoder) release() {
	if e.buf.Cap() > maxKeptEncoder || cap(e.fast) > maxKeptEncoder {
		return
	}
	e.buf.Reset()
	encoders.Put(e)
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
	varyPrefer      = []string{"Prefer"}
)
