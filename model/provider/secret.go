package provider

import (
	"fmt"
	"io"
	"log/slog"
)

// Redacted is what a Secret prints as, however it is printed.
const Redacted = "[redacted]"

// Secret is an API key. It prints as "[redacted]" through fmt (every
// verb, %#v included), log/slog, encoding/json and encoding.TextMarshaler
// users, so a key is never logged or printed by accident. Reveal gives the
// key itself, for the one place that sets the request header.
//
// fmt only calls these methods on values it reaches through exported
// fields; through an unexported field (or a pointer printed with a wrong
// verb) it prints the string itself. So an adapter keeps its key in a
// *Client (which holds it behind a pointer to the string, where fmt
// prints only an address), never as a Secret field of its own unexported
// struct.
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
