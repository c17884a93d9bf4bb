// Package wire holds what crosses the HTTP API's wire, written once for
// both ends: the JSON bodies that package httpapi writes and package
// client reads (TaskBody, TaskList, Credits, Ledger, ErrorBody), and the
// Standard Webhooks signature of callback deliveries, which package
// webhook makes (Headers) and receivers check (Verify).
//
// It is a small leaf: it imports only the root package's vocabulary
// (statuses, error codes, ledger kinds) and the standard library, so a
// client or a callback receiver links none of the server's packages.
// docs/api.md describes the bodies field by field.
package wire
