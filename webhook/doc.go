// Package webhook delivers task callbacks: when a task that was
// submitted with a callback_url ends, its body (as GET /tasks/{id} would
// show it) is POSTed to that URL, signed per the Standard Webhooks
// scheme (https://www.standardwebhooks.com):
//
//	webhook-id:        msg_<task id>   (the same on every retry, and on a requeued task's new ending)
//	webhook-timestamp: Unix seconds of this attempt
//	webhook-signature: v1,<base64 HMAC-SHA256(key, id + "." + timestamp + "." + body)>
//
// The key is the user's secret ("whsec_" + base64 key, from
// Service.WebhookSecret or GET {prefix}/webhook-secret). After the user
// rotates it (Service.RotateWebhookSecret), each attempt within
// imagegen.Config.WebhookSecretGrace is signed with the new secret and
// the replaced one (Service.WebhookSigningSecrets): the header then
// lists two signatures, space separated, the new one first, so a
// receiver with either verifies it. A delivery
// answered with anything but 2xx, or not answered, is retried with
// exponential backoff (5 s, doubling, at most 10 min apart, 10 attempts
// by default: about half an hour), through the guarded fetcher's SSRF check,
// never following redirects. A 429 or 503 with a Retry-After (seconds or
// an HTTP date; a Retry-After-Ms in milliseconds wins over it) waits the longer of the backoff and Retry-After, at most
// Config.MaxBackoff: a receiver can slow its deliveries down, not hurry
// them nor park them; a malformed or negative one leaves the backoff.
// Such an attempt still counts towards Config.MaxAttempts (RetryWebhook:
// the receiver was reached and refused; PostponeWebhook, which counts
// nothing, is for deliveries the dispatcher itself did not attempt), so
// a receiver that always answers 429 is given up like any other. A 410
// Gone gives the delivery up at once, logged at warn with the task id and
// counted as "given_up" by the Observer. An attempt that failed on our
// side before anything was sent (the task or the owner's secret could
// not be read, the body could not be rendered, the request could not be
// signed) does not count towards MaxAttempts, since the receiver was
// never reached: it is given back with the backoff (PostponeWebhook,
// counted as "not_sent"), and only after MaxAttempts of those in a row
// (counted in memory by this dispatcher) do the next ones count as
// attempts, so that a failure of ours that never heals is still given
// up, after at most twice MaxAttempts tries per dispatcher. The
// Poster's own refusals (a URL or address the guard refuses, a host
// that does not resolve) are the receiver's, and count. Deliveries are queued by the store in the
// same step that finishes the task, so on Redis they survive restarts.
// A failed task that an operator requeues ends again and queues its
// callback again, under the same webhook-id: receivers dedupe on it
// together with the task's status and finished_at, or keep the latest
// state. Its old delivery is dropped by the requeue, and the outcome of
// an attempt of it still in flight does not touch the new one (the
// store's claimed delivery IDs, see imagegen.WebhookStore).
//
// One receiver cannot hold up another's callbacks: the Dispatcher claims
// deliveries in due-time order and runs each on its own, within
// Config.AttemptTimeout (10 s), with at most Config.Concurrency (8) in
// flight, at most Config.PerDestination (2) to one host and port and at
// most Config.PerOwner (2) for one owner's tasks, whatever hosts they
// name; a delivery claimed while its destination or owner has its share
// waits for its lease to end.
//
// The signing (Headers, Verify) lives in package wire, which receivers
// share with the server: they verify with wire.Verify or
// client.VerifyWebhook, without importing this package.
package webhook
