// Package stability is the imagegen.Model adapter for Stability AI's
// Stable Image API (v2beta): POST {BaseURL}/v2beta/stable-image/generate/
// {core|ultra|sd3}, a multipart/form-data body (even without a file),
// authenticated with "Authorization: Bearer <key>", answered as JSON
// ("accept: application/json": {"image":"<base64>","finish_reason",
// "seed"}; the API's default image/* would put finish_reason in a header
// instead; JSON keeps one answer shape, the one the documented examples
// show). Every call asks for output_format png, and sends the task's
// seed as "seed" (Plan.Seeded; Stability reads 0 as "random"); the
// answer's seed, the one the image was made with, comes back as the
// image's Seed, which the service records on the task when it is not
// the task's (a seed of 0 a user asked for).
//
// # Models and cost
//
// Config.Model chooses the service; Plan records "stability/<model>" and
// the cost on the task. The cost is Config.Cost, else the model's
// default below (Stability's own prices range from about 2.5 credits for
// sd3.5-flash to 8 for ultra; imagegen's run from 1 to 3):
//
//	Model               endpoint          image-to-image   default cost
//	core (default)      /generate/core    no               2
//	ultra               /generate/ultra   yes              3
//	sd3.5-large         /generate/sd3     yes              3
//	sd3.5-large-turbo   /generate/sd3     yes              2
//	sd3.5-medium        /generate/sd3     yes              2
//	sd3.5-flash         /generate/sd3     yes              1
//	sd3-large, sd3-large-turbo, sd3-medium (legacy): as their 3.5 kin
//
// SD3 models are sent as the form fields model and mode (text-to-image
// or image-to-image). Config.StylePreset is sent as style_preset (core
// and SD3; New refuses it for ultra). To run text-to-image on core and
// image-to-image on another model, route the scenes with route.ByScene.
//
// # Aspect ratios
//
// Every ratio of the interface is accepted. The API's aspect_ratio takes
// 16:9, 1:1, 21:9, 2:3, 3:2, 4:5, 5:4, 9:16 and 9:21, and answers with
// its own size for it (about 1 megapixel; several are only near their
// ratio). A ratio the API lacks is sent as the nearest one on a log
// scale, and every answer is centre-cropped to exactly the asked ratio
// with the provider helpers (the adapter reads each answer's real size;
// the sizes below are SD3's):
//
//	ratio   aspect_ratio sent   answer      result
//	1:1     "1:1"               1024x1024   1024x1024
//	3:2     "3:2"               1216x832    1215x810 (crop)
//	2:3     "2:3"               832x1216    810x1215 (crop)
//	16:9    "16:9"              1344x768    1344x756 (crop)
//	9:16    "9:16"              768x1344    756x1344 (crop)
//	4:3     "5:4" (nearest)     1088x896    1088x816 (crop)
//	3:4     "4:5" (nearest)     896x1088    816x1088 (crop)
//
// auto (the API's rule, docs/api.md): text-to-image sends "1:1".
// Image-to-image sends no aspect_ratio (SD3 takes it for
// text-to-image only, and the init image sets the answer's shape on
// every service); the answer is centre-cropped to the requested
// ratio, or for auto to the ratio nearest the reference (for a WebP
// reference, whose size the adapter cannot read, the ratio nearest
// the answer's own size).
//
// # Image-to-image
//
// ultra and the SD3 models take one init image, sent as the file part
// "image" with strength (Config.Strength, default 0.5: 0 keeps the
// reference, 1 ignores it). Plan refuses image-to-image on core, without
// a Fetcher, or with more than one reference (*imagegen.ValidationError
// on "scene" or "image_input"). The reference is fetched through
// Config.Fetcher (use the guarded fetcher, *fetch.Fetcher). PNG, JPEG
// and WebP are sent as they are, GIF is converted to PNG, anything else
// fails the task as invalid input, as does an image the API would refuse:
// a side under 64 px, fewer than 4,096 or more than 9,437,184 pixels, or
// more than about 10 MiB.
//
// # Timeouts
//
// The generate call answers only when the image is done. The default
// HTTP client (provider.ContextBoundHTTPClient) bounds connects and TLS
// handshakes to 10 s and sets no timeout on the answer: the context,
// the service's GenerateTimeout, bounds the call, and Config.MaxDuration
// (30 min) a context without a deadline. A call cut short after it was
// sent is not sent again within the attempt (provider.ErrMaybeAccepted).
// See provider's Timeouts.
//
// # Failures
//
// Every error is a *imagegen.ModelError. Stability's error bodies are
// {"id","name","errors":["field: message"]} (the legacy {"id","name",
// "message"} is read too):
//
//	200 finish_reason CONTENT_FILTERED   refused ("the generated image was blocked by
//	                                     the provider's content filter"), not retried
//	403 content_moderation               refused (MsgRefused), not retried
//	401 unauthorized                     operator error: not retried, the user reads
//	402 payment_required                   "the image service is misconfigured", and a
//	403 other, 404 (not_found,             fallback chain moves on
//	  generation_not_found)
//	400 bad_request                      rejected; invalid input when errors[] names image
//	413 (payload too large)              invalid input (the reference is too large)
//	422 invalid_language                 rejected: "the image provider accepts prompts in
//	                                     English only"; other 422s rejected
//	429 rate_limit_exceeded              retried after Retry-After, else after the
//	                                     documented 60 s time-out
//	500 internal_error, other 5xx        retried
//
// Retries happen within the call (Config.MaxRetries, default 3) on the
// injected clock, never past the context's deadline (the error is then
// returned, retryable, for the task queue). A 200 answer with another
// finish_reason, or without a usable image, fails retryable. Stability's
// words go to the logged cause (ModelError.Err), with the key scrubbed
// out, never to the user.
package stability
