// Package openai is the imagegen.Model adapter for the OpenAI Images API:
// POST /v1/images/generations (JSON) for text-to-image and
// POST /v1/images/edits (multipart/form-data, one image[] part per
// reference image) for image-to-image, authenticated with
// "Authorization: Bearer <key>".
//
// # Models
//
// GPT image models (gpt-image-1, the default, and gpt-image-1-mini,
// gpt-image-1.5, ...) do both scenes and always answer base64 PNG.
// dall-e-3 does text-to-image only: Plan refuses image-to-image with a
// *imagegen.ValidationError on field "scene". The adapter asks dall-e-3
// for b64_json too, but an answer with URLs is downloaded through
// Config.Fetcher. Plan records "openai/<model>" and Config.Cost
// (default 2) on the task.
//
// # Aspect ratios
//
// OpenAI takes three sizes per model. Each ratio is sent as the size of
// exactly that ratio, or else the nearest one (on a log scale), whose
// result is then centre-cropped to the exact ratio and re-encoded as PNG:
//
//	ratio   gpt-image-* sends   result           dall-e-3 sends   result
//	1:1     1024x1024           1024x1024        1024x1024        1024x1024
//	3:2     1536x1024           1536x1024        1792x1024        1536x1024 (crop)
//	2:3     1024x1536           1024x1536        1024x1792        1024x1536 (crop)
//	16:9    1536x1024           1536x864 (crop)  1792x1024        1792x1008 (crop)
//	9:16    1024x1536           864x1536 (crop)  1024x1792        1008x1792 (crop)
//	4:3     1536x1024           1364x1023 (crop) 1792x1024        1364x1023 (crop)
//	3:4     1024x1536           1023x1364 (crop) 1024x1792        1023x1364 (crop)
//
// With Config.ExactRatiosOnly, Plan instead refuses a ratio without an
// exact size (*imagegen.ValidationError on "aspect_ratio"): gpt-image
// models then take 1:1, 3:2 and 2:3, dall-e-3 only 1:1.
//
// auto (the API's rule, docs/api.md): 1:1 for text-to-image; for
// image-to-image the ratio nearest the first reference image (among
// the exact ones with ExactRatiosOnly), sent and cropped as in the
// table. The API's own size "auto" is not used, because the result
// must have the first reference's ratio and the adapter must know
// what to crop to.
//
// # Reference images
//
// Fetched in order through Config.Fetcher (use the guarded fetcher,
// *fetch.Fetcher). PNG, JPEG and WebP are sent as they are; GIF is
// converted to PNG; anything else fails the task as invalid input.
//
// # Timeouts
//
// images/generations and images/edits answer only when the image is
// done, which a high-quality GPT image can take minutes for. The default
// HTTP client (provider.ContextBoundHTTPClient) bounds connects and TLS
// handshakes to 10 s and sets no timeout on the answer: the context,
// the service's GenerateTimeout, bounds the call, and Config.MaxDuration
// (30 min) a context without a deadline. A call cut short after it was
// sent is not sent again within the attempt (provider.ErrMaybeAccepted).
// dall-e-3 URLs are downloaded through Config.Fetcher, bounded by its
// own Timeout. See provider's Timeouts.
//
// # Failures
//
// Every error is a *imagegen.ModelError. moderation_blocked (GPT image
// models) and content_policy_violation (dall-e) are refusals; 401 and
// invalid_api_key, insufficient_quota and billing_hard_limit_reached are
// operator errors (not retried; the user reads "the image service is
// misconfigured"); 408, 429 and 5xx are retried within the call
// (Config.MaxRetries, honouring retry-after-ms and Retry-After on the
// injected clock, never past the context's deadline) and stay retryable
// after; x-should-retry overrides. OpenAI's message goes to the logged
// cause (ModelError.Err), with the key scrubbed out, never to the user.
package openai
