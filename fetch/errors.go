package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
)

// Errors; check them with errors.Is. Their messages are safe to show.
var (
	ErrBadURL           = errors.New("not an absolute http or https URL without credentials")
	ErrBlockedAddress   = errors.New("address not allowed")
	ErrTooLarge         = errors.New("too large")
	ErrTooManyPixels    = errors.New("too many pixels")
	ErrNotImage         = errors.New("not a supported image (PNG, JPEG or GIF)")
	ErrTooManyRedirects = errors.New("too many redirects")
	ErrStatus           = errors.New("unexpected HTTP status")
	ErrTooSlow          = errors.New("too slow")
)

// TimedOut reports whether err is a fetch that ran out of time: its
// deadline passed, or the host sent too slowly (ErrTooSlow).
func TimedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTooSlow)
}

// StatusError is a non-2xx answer. errors.Is(err, ErrStatus) holds for
// it; errors.As gives the code.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return fmt.Sprintf("%v %d", ErrStatus, e.Code) }

// Is makes errors.Is(err, ErrStatus) true.
func (e *StatusError) Is(target error) bool { return target == ErrStatus }

// downloadError is a failure to connect or transfer. Its message is a
// short, safe reason; the cause (which may name our resolver or other
// internals) is kept for logs behind Unwrap.
type downloadError struct {
	reason string
	cause  error
}

func (e *downloadError) Error() string { return "could not be downloaded: " + e.reason }
func (e *downloadError) Unwrap() error { return e.cause }

// failure turns an error of the HTTP client into one of ours: a
// sentinel, the context's error (timeouts are context.DeadlineExceeded),
// or a downloadError. ctx is the fetch's own context.
func failure(ctx context.Context, err error, reason string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // drop "Get <url>:" from the message
	}
	for _, s := range []error{ErrBlockedAddress, ErrTooManyRedirects, ErrBadURL} {
		if errors.Is(err, s) {
			return err
		}
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrTooSlow) {
		return cause
	}
	switch ctxErr := ctx.Err(); {
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return fmt.Errorf("timed out: %w", ctxErr)
	case ctxErr != nil:
		return fmt.Errorf("stopped: %w", ctxErr)
	}
	var netErr net.Error
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var authErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recErr tls.RecordHeaderError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		reason = "host not found"
	case errors.As(err, &dnsErr):
		reason = "host could not be resolved"
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("timed out: %w", context.DeadlineExceeded)
	case errors.Is(err, syscall.ECONNREFUSED):
		reason = "connection refused"
	case errors.As(err, &certErr), errors.As(err, &authErr), errors.As(err, &hostErr):
		reason = "certificate not trusted"
	case errors.As(err, &recErr):
		reason = "TLS handshake failed"
	}
	return &downloadError{reason: reason, cause: err}
}
