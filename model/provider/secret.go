package provider

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Redacted is what a Secret prints as, however it is printed.
const Redacted = "[redacted]"

// Secret is an API key. It prints as "[redacted]" through fmt (every
// verb, %#v included), log/slog, encoding/json and encoding.TextMarshaler
// users, so a key is never logged or printed by accident. Reveal gives the
// key itself, for the one place that sets the request header.
//
// fmt only calls these methods on values it can reach through exported
// fields: keep a Secret in an exported field, or behind a pointer, in any
// struct that might be printed.
type Secret string

var (
	_ fmt.Stringer   = Secret("")
	_ fmt.GoStringer = Secret("")
	_ fmt.Formatter  = Secret("")
	_ slog.LogValuer = Secret("")
)

// Reveal returns the key. Call it only to set the auth header.
func (s Secret) Reveal() string { return string(s) }

// IsZero reports whether no key is set.
func (s Secret) IsZero() bool { return s == "" }

// String returns "[redacted]".
func (Secret) String() string { return Redacted }

// GoString returns "[redacted]", for %#v.
func (Secret) GoString() string { return Redacted }

// Format prints "[redacted]" for every verb.
func (Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, Redacted) }

// LogValue hides the key from log/slog.
func (Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }

// MarshalJSON writes "[redacted]".
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText writes "[redacted]".
func (Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// scrub replaces every occurrence of the secrets in s. Empty and very
// short secrets are ignored (they would blank out ordinary text).
func scrub(s string, secrets []Secret) string {
	for _, k := range secrets {
		if len(k) >= minScrubLen {
			s = strings.ReplaceAll(s, string(k), Redacted)
		}
	}
	return s
}

// minScrubLen is the shortest secret scrub looks for.
const minScrubLen = 4

// scrubbedError is err with the secrets removed from its message; it
// unwraps to err so errors.Is and errors.As still work.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrubError returns err, or a wrapper whose message has no secret.
func scrubError(err error, secrets []Secret) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := scrub(msg, secrets); clean != msg {
		return &scrubbedError{msg: clean, err: err}
	}
	return err
}
