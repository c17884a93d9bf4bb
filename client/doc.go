// Package client is a Go client of the imagegen HTTP API (docs/api.md):
// submit a generation task, wait for it to end, download its images.
//
//	c, err := client.New("https://img.example.com", os.Getenv("IMAGEGEN_API_KEY"))
//	task, err := c.Generate(ctx, imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a red fox"})
//	if err == nil && task.Status == imagegen.StatusSuccess {
//		err = c.Download(ctx, task.Images[0], file)
//	}
//
// # Rate limit
//
// The API allows a number of requests per minute per API key and says so
// in every answer: the RateLimit header ("default";r=R;t=T) tells how many
// requests are left (r) and, when none is, in how many seconds one more is
// allowed (t); a refused request gets 429 with Retry-After. A Client keeps
// that state for all its goroutines: before each request it waits until
// the key has budget left, counting the requests it has in flight, so that
// one Client polling many tasks at once stays within the key's limit. Only
// requests made with the same key from elsewhere can still cause a 429;
// Wait and Generate then wait for Retry-After and go on, while Submit and
// Task return the *APIError. A wait an answer asks for holds back every
// goroutine of the Client, so it is capped at 5 minutes (the server asks
// for a minute at most): one odd answer, of a proxy say, asking for a
// day does not stop the Client for a day.
//
// # Polling
//
// Wait sends "Prefer: wait=25" (RFC 7240) with each poll: a server with
// the long-poll extension holds the request until the task ends or 25
// seconds pass, says so with "Preference-Applied: wait=N", and the client
// then polls again at once. A server without it ignores the header, and
// Wait polls with a growing interval instead (1s, 2s, 4s, then every 6s,
// so one Wait alone stays within 10 requests a minute; see
// WithPollInterval and WithLongPoll).
//
// # Errors
//
// An answer with an error status is an *APIError carrying the server's
// code and message. It wraps the sentinel errors of package imagegen, so
//
//	errors.Is(err, imagegen.ErrInsufficientCredits)
//
// works as on the server side. A task that ends failed is not an error of
// the API: Wait and Generate return it with its Error message, and
// Task.Err turns it into an error wrapping ErrTaskFailed.
//
// # Extensions
//
// The server implements optional extensions of the core API (docs/api.md), which this
// package uses where asked (a server without them answers 404 not_found):
//
//   - SubmitWithKey sends an Idempotency-Key, so that a submit retried
//     after a network error or a 5xx cannot create or charge a second
//     task: the server replays the first answer.
//   - Cancel ends a pending or processing task (refunded while pending;
//     one whose generation has begun keeps its charge); a task that
//     has already ended gives an error wrapping
//     imagegen.ErrInvalidTransition.
//   - List pages through the caller's tasks, newest first.
//   - Credits returns the credit balance.
//   - Task.ErrorCode says, for programs, why a task failed (for example
//     imagegen.CodeContentPolicy: retrying the same prompt will not help).
//   - Long polls (Prefer: wait=N), which Wait uses; see Polling.
//   - Callbacks: a Request with CallbackURL is POSTed its task when it
//     ends, signed per Standard Webhooks with the user's secret
//     (WebhookSecret). A receiver checks each callback with
//     VerifyWebhook, or WebhookVerifier.Receive in its handler, before
//     trusting it. RotateWebhookSecret replaces the secret; the one it
//     replaced still signs callbacks for a grace (a day by default).
//
// The API key is sent only in the Authorization header of API requests (not
// to image URLs, which need no key), not on a redirect to another origin
// than the API's (another port or a subdomain included), and never appears
// in errors or in the printed Client.
package client
