package provider

import "strings"

// minRedactLen is the shortest secret Redactor looks for: shorter ones
// would blank out ordinary text.
const minRedactLen = 4

// Redactor returns a function that replaces every occurrence of the
// secrets in a string with "[redacted]". Being a func, it prints as an
// address, so a Policy holding one never shows the keys.
func Redactor(secrets ...Secret) func(string) string {
	var keys []*Secret
	for _, k := range secrets {
		if len(k) >= minRedactLen {
			keys = append(keys, &k)
		}
	}
	return func(s string) string {
		for _, k := range keys {
			s = strings.ReplaceAll(s, k.Reveal(), Redacted)
		}
		return s
	}
}

// redactedError is err with the secrets removed from its message; it
// unwraps to err so errors.Is and errors.As still work.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactError returns err, or a wrapper whose message has no secret.
func redactError(err error, redact func(string) string) error {
	if err == nil || redact == nil {
		return err
	}
	msg := err.Error()
	if clean := redact(msg); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}
