package httpapi

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// openAPI is the OpenAPI 3.1 description of the API, for the default
// prefix (its one server URL is "/api/v1").
//
//go:embed openapi.json
var openAPI string

const openAPIServer = `"url": "/api/v1"`

// OpenAPI returns the OpenAPI 3.1 description of the API mounted at
// prefix ("" for the default, /api/v1): the document that
// GET {prefix}/openapi.json serves.
func OpenAPI(prefix string) []byte {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" || prefix == "/api/v1" {
		return []byte(openAPI)
	}
	url, _ := json.Marshal(prefix) // a string always marshals
	return []byte(strings.Replace(openAPI, openAPIServer, `"url": `+string(url), 1))
}

// handleOpenAPI serves GET {prefix}/openapi.json. It needs no API key.
func (h *Handler) handleOpenAPI() http.Handler {
	body := OpenAPI(h.cfg.Prefix)
	length := strconv.Itoa(len(body))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd["Content-Type"] = jsonContentType
		hd["X-Content-Type-Options"] = nosniff
		hd.Set("Content-Length", length)
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
	})
}
