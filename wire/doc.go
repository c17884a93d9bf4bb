// Package wire holds what crosses the HTTP API's wire, written once for
// both ends:
//
//   - the JSON bodies that package httpapi writes and package client
//     reads: Submitted, TaskBody (with the full view's TaskDetails),
//     TaskList, Credits, Ledger, and the error answer ErrorBody with its
//     code (APIErrorCode, which Sentinel maps to the errors of package
//     imagegen);
//   - the strict decoding of a submit body (DecodeRequest);
//   - the Standard Webhooks signature of callback deliveries, which
//     package webhook makes (Headers) and receivers check (Verify).
//
// It is a small leaf: it imports only the root package's vocabulary
// (requests, statuses, error codes, ledger kinds) and the standard
// library, so a client or a callback receiver links none of the server's
// packages. docs/api.md describes the bodies field by field.
package wire
