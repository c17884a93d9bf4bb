// Package imagegen is an image-generation task service: a client submits
// a task (text-to-image, or image-to-image with reference image URLs),
// gets its id at once, and polls it until it succeeds with images or
// fails with a reason. Each task costs the user 1 to 3 credits.
//
// [Service] is the whole service, shaped to be embedded: everything it
// touches is an interface, so a Go app plugs in its own pieces.
//
//   - [Store] keeps tasks, the work queue with leases, credits (an
//     append-only ledger), API keys, idempotency records, callback
//     deliveries, shared secrets and console sessions: store/memory for
//     one process, store/redis and store/postgres for many API and
//     worker processes on one Redis or one PostgreSQL. Backend authors
//     find the shared rules in store/storekit and blob/blobkit, and the
//     conformance suites in store/storetest and blob/blobtest.
//   - [BlobStore] keeps image bytes, apart from their records in the
//     Store: blob/memory, blob/redis (the stores' defaults), blob/file
//     (a directory) and blob/s3 (S3-compatible object storage). Workers
//     write the bytes before the record and [Service.SweepBlobs] deletes
//     bytes whose record is gone.
//   - [Model] prices a request at submit ([Model.Plan]) and generates it
//     ([Model.Generate]): model/placeholder draws locally; model/openai,
//     model/gemini, model/replicate, model/fal, model/stability and
//     model/bfl call providers, model/a1111 and model/comfyui a
//     self-hosted server; model/route chooses per request and falls back
//     between providers.
//   - [Clock] is injected, so tests move time instead of sleeping
//     (package imagegentest has a manual clock and a scripted model).
//
// Package httpapi is the HTTP face (the API that docs/api.md describes,
// mounted on any *http.ServeMux), package wire the bodies and signatures
// it shares with package client, the Go client; package server wires
// the service, the API, the limits and callback deliveries in one call,
// and cmd/imagegen is the standalone server and command line. The front
// ends (httpapi, console) submit through [Service.SubmitIdempotent] and
// never reach the store past the service; what needs a part of the
// store (the callback dispatcher, the console's sessions) is given it in
// its Config.
//
// # Credits
//
// The price is fixed at submit by the model that will run the task, and
// debited in the same atomic store operation that creates the task: there
// is never a task without its charge, nor a charge without its task, and
// the balance never goes negative ([ErrInsufficientCredits]). A task that
// ends failed is refunded exactly once, but for one its owner cancelled
// once a worker had claimed it ([Service.Cancel]): it keeps its charge. The host app grants credits and
// charges its own web use through the same ledger ([Service.Grant],
// [Service.ChargeWeb]), so the API and the app share one balance.
//
// # Listing
//
// [Service.ListTasks] and [Service.ListLedger] page through an owner's
// tasks and ledger, newest first. Their cursors are opaque: the store's
// cursor (often a store-wide sequence number) sealed with AES-GCM under a
// key the store shares as [ListCursorSecretName], with the owner and
// the list as associated data, so a cursor reveals nothing of other
// owners' activity and opens only for the owner and list it was given
// for. One that does not open (altered, another owner's, the other
// list's, from before an upgrade or under a replaced key) is a
// *[ValidationError] on "cursor": start again from the first page. The
// operator's [Inspector.ListTasks] pages across owners with the store's
// cursor as it is.
//
// # Work
//
// [Service.Run] runs the workers: each claims a pending task with a lease
// and a fencing token, renews the lease while the model runs and until
// the outcome is stored, and finishes the task only while it holds the
// lease. A worker that dies loses its lease and the task goes back to
// pending for another; after WorkerConfig.MaxAttempts it fails and is
// refunded. Retryable model errors (rate limits, 5xx, timeouts) are
// retried with backoff; refusals are not. [Service.RunOnce] runs one queued task now, for tests.
//
// # Operating
//
// Config.Observer is told of submits, claims, finishes, refunds, provider
// calls and fallbacks, and (server.New hands it on) of the API's answers
// and the callback deliveries: one [Observer] for the whole stack
// (package metrics counts them for Prometheus); each
// task's life is logged with its id and the id of the request that
// submitted it ([WithRequestID], kept as Task.RequestID). [Service.Inspector]
// is the operator's view across owners: queue statistics, listing and
// showing any task, retrying, cancelling and purging, each logged with
// the operator's reason.
//
// # Errors
//
// Check errors with errors.Is against the sentinels ([ErrUnauthorized],
// [ErrInsufficientCredits], [ErrTaskNotFound], [ErrInvalidParams],
// [ErrRateLimited], ...). A request that breaks a rule of the interface
// is a *[ValidationError] naming the field; a failed generation is a
// *[ModelError], whose UserMessage is safe to show.
package imagegen
