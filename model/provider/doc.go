// Package provider is the plumbing that every provider adapter (openai,
// gemini, and the ones to come) shares, written once: configuration, a
// key type that never prints, a retrying HTTP call, the mapping of
// provider failures onto *imagegen.ModelError, aspect-ratio and crop
// helpers, and reference-image fetching.
//
// # Writing an adapter
//
//	type Config struct {
//		provider.Config            // HTTPClient, BaseURL, APIKey, Cost, MaxRetries, Clock
//		Model   string
//		Fetcher fetch.ImageFetcher
//	}
//
//	func New(c Config) (*Model, error) {
//		client, err := provider.NewClient(&c.Config, provider.Defaults{
//			Provider: "acme", BaseURL: "https://api.acme.example/v1", Cost: 2,
//			Classify: classify, // the provider's error body → NewError(..., Refusal()/OperatorError()/Retry(...))
//		})
//		// c.Config is now zero: the client keeps it, key included, safe from printing
//		...
//		return &Model{client: client, opts: c}, nil
//	}
//
//	func (m *Model) Generate(ctx context.Context, g imagegen.Generation) ([]imagegen.GeneratedImage, error) {
//		refs, err := provider.FetchReferences(ctx, "acme", m.opts.Fetcher, g.Request.ImageInput, provider.PNG, provider.JPEG)
//		ratio := provider.TargetRatio(g.Request, refs, nil)
//		header := http.Header{"Authorization": {"Bearer " + m.client.Key().Reveal()}}
//		build, err := provider.PostJSON(m.client.URL("/generate"), body, header)
//		resp, err := m.client.Do(ctx, build) // retries; every error is a *imagegen.ModelError
//		...
//		img, _, err = provider.CropToRatio(img, ratio) // when the provider's size is only near
//	}
//
// Polling adapters (Replicate, fal, Stability's async results) build
// their status calls with Get, wait between polls with Wait (on the
// client's Policy.Clock, never past the deadline), and download URL
// results with DownloadResult, after CheckAnswerImages has refused an
// answer that lists more than MaxAnswerImages pictures. Tests use package providertest: the
// conformance suite every adapter runs (Run), a clock that records
// waits, a scripted fetch.ImageFetcher, PNG/JPEG makers, the loader of the
// wire examples each adapter keeps in its testdata directory, and
// NoSecretAnywhere.
//
// # Failures
//
// Every error an adapter returns is a *imagegen.ModelError. NewError maps
// an HTTP status: 408, 429 and 5xx are retryable; 401, 403 and 404 are
// operator errors (a bad key, no access, a wrong model name: not
// retryable, the user reads "the image service is misconfigured");
// other statuses are "the image provider rejected the request". Refused
// is set only when the adapter recognises a content refusal
// (Refusal option). A Classify reads the provider's JSON error form
// with ErrorBody, and falls back on the status alone when the body is
// not that form. The user-facing Message never carries the
// provider's words; those go to Err, for operator logs, with the key
// redacted.
//
// # Retries
//
// Do retries what Classify marks retryable, at most Policy.MaxRetries
// times (Config.MaxRetries, default 3), waiting on the injected clock:
// the provider's retry-after-ms, Retry-After (seconds or HTTP date) or
// body hint (Policy.RetryDelay, e.g. Google's RetryInfo), else
// exponential backoff with jitter. It never waits past the context's
// deadline: it returns the last retryable error at once instead, so
// the task queue can retry later.
//
// A submit is not sent twice. No adapter (OpenAI, Stability, fal,
// Replicate, BFL, Gemini, a1111, ComfyUI) sends an idempotency key the
// provider dedupes on with the call that starts a paid generation (an
// sdapi server's force_task_id names the job but does not dedupe it), so
// a POST without an Idempotency-Key header that reached the provider
// and whose answer was lost (a 2xx body cut short by a reset or an
// unexpected EOF, or no answer before the HTTP client's own timeout
// after the request was written) is not retried by Do: the provider may
// have accepted it and will charge for it. Do returns at once an error
// that wraps ErrMaybeAccepted, retryable, and the service's
// attempt-level retry (bounded by the worker's max attempts) decides
// whether the task runs again. GETs (polls, downloads), PUTs and
// DELETEs, a POST that carries an Idempotency-Key, and a POST its
// adapter declared safe to repeat with Replayable (ComfyUI's image
// upload, under a fixed name with overwrite: a Go-side mark, nothing is
// sent), are retried as any other network error; so is a POST that
// never reached the provider (a refused dial) or was reset before any
// answer.
//
// # Timeouts
//
// Adapters whose generation call is synchronous, answered only when the
// image is done (a1111's txt2img, OpenAI's images/generations and
// edits, Stability's stable-image/generate, Gemini's generateContent),
// take ContextBoundHTTPClient by default (Defaults.HTTPClient): connects
// and TLS handshakes bounded to 10 s, no timeout on the answer. The
// context, the service's GenerateTimeout, bounds the call, so an
// operator who raises GenerateTimeout above DefaultHTTPClient's
// 3-minute header timeout for a slow model is not cut short by the
// client (which lost the paid answer: ErrMaybeAccepted). A context
// without a deadline is bounded by Config.MaxDuration (default 30 min,
// Client.Bound, called first in every adapter's Generate). Their
// downloads of result URLs go through the fetcher, bounded by its own
// Timeout. Adapters that submit and then poll (BFL, fal, Replicate,
// whose "Prefer: wait" is at most 60 s, ComfyUI, whose POST /prompt
// only queues) keep DefaultHTTPClient: each of their calls is short.
// Config.MaxDuration bounds their Generate all the same, so that a job
// the provider never ends is not followed for ever by a caller without
// a deadline: it is cancelled (fal, Replicate, whose Cancel-After it
// also sets) or stopped (ComfyUI) as at any deadline.
// Do never reads an answer past its context, nor the connection a 101
// Switching Protocols hands over (net/http's one body the context does
// not bound): that answer is a failure of its status at once.
//
// # Keys
//
// Secret prints as "[redacted]" through fmt, log/slog and encoding/json.
// But fmt prints a field it reaches through an unexported field without
// calling its methods, so an adapter must not keep a Secret (or a Config)
// in its own unexported fields: it keeps the *Client, which holds the key
// where no printing reaches it, and calls Reveal only to set the auth
// header. Policies redact the key from provider answers and transport
// errors (Redactor). providertest.NoSecret checks all of this.
package provider
