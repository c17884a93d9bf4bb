package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// NoSecret fails the test if secret shows in any way v may be printed
// or logged: fmt's %v, %+v, %#v, %s and %q, log/slog's text and JSON
// handlers, and encoding/json. A provider.Config passes it; a Model
// should pass NoSecretAnywhere.
func NoSecret(t testing.TB, secret string, v any) {
	t.Helper()
	for _, s := range printed(v) {
		if strings.Contains(s, secret) {
			t.Errorf("the key shows in %q", s)
		}
	}
}

// NoSecretAnywhere is NoSecret for v as it is and for v inside a
// caller's unexported struct field, where fmt calls no method of v (so
// a Secret type's own redaction does not help): what holds a key must
// hold it where printing cannot reach, as *provider.Client does.
func NoSecretAnywhere(t testing.TB, secret string, v any) {
	t.Helper()
	NoSecret(t, secret, v)
	type holder struct{ inner any }
	NoSecret(t, secret, holder{v})
	NoSecret(t, secret, &holder{v})
}

func printed(v any) []string {
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		out = append(out, fmt.Sprintf(verb, v))
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("value", "value", v)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("value", "value", v)
	out = append(out, buf.String())
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b))
	}
	return out
}
