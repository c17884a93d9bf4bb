// Package gemini is the imagegen.Model adapter for Google's Gemini API
// (Developer API, v1beta): POST {BaseURL}/models/{model}:generateContent,
// authenticated with the "x-goog-api-key" header, asking for
// generationConfig.responseModalities ["TEXT", "IMAGE"]. The default
// model is gemini-2.5-flash-image; Plan records "gemini/<model>" and
// Config.Cost (default 1) on the task.
//
// # Aspect ratios
//
// Gemini takes every ratio of the interface as
// generationConfig.imageConfig.aspectRatio, and answers with its own
// size for it, which the adapter centre-crops to the exact ratio where
// it is only near (sizes as Google documents them for
// gemini-2.5-flash-image at 1K; the adapter reads the real size of each
// answer, so other models and sizes work the same way):
//
//	ratio   aspectRatio sent   answer      result
//	1:1     "1:1"              1024x1024   1024x1024
//	3:2     "3:2"              1248x832    1248x832
//	2:3     "2:3"              832x1248    832x1248
//	16:9    "16:9"             1344x768    1344x756 (crop)
//	9:16    "9:16"             768x1344    756x1344 (crop)
//	4:3     "4:3"              1184x864    1152x864 (crop)
//	3:4     "3:4"              864x1184    864x1152 (crop)
//
// auto (the API's rule, docs/api.md): text-to-image sends "1:1".
// Image-to-image sends no aspectRatio, so the model follows the
// reference images, and the answer is centre-cropped to the ratio
// nearest the first reference (to the ratio nearest its own size when
// that reference's size cannot be read: WebP, HEIC). An answer of
// another shape than asked (a model that ignores imageConfig) is
// cropped the same way.
//
// # Reference images
//
// Fetched in order through Config.Fetcher (use the guarded fetcher,
// *fetch.Fetcher) and sent as inlineData parts after the prompt, with
// the MIME type read from their bytes (else from the Content-Type).
// PNG, JPEG, WebP, HEIC and HEIF are sent as they are, GIF is converted
// to PNG, anything else fails the task as invalid input, as do
// references too large to send inline together (a request must stay
// under about 20 MB; the Files API is not used).
//
// # Timeouts
//
// generateContent answers only when the image is done (a pro model's 4K
// image takes a while). The default HTTP client
// (provider.ContextBoundHTTPClient) bounds connects and TLS handshakes
// to 10 s and sets no timeout on the answer: the context, the service's
// GenerateTimeout, bounds the call, and Config.MaxDuration (30 min) a
// context without a deadline. A call cut short after it was sent is not
// sent again within the attempt (provider.ErrMaybeAccepted). See
// provider's Timeouts.
//
// # Failures
//
// Every error is a *imagegen.ModelError. Three failures arrive as
// HTTP 200:
//
//	promptFeedback.blockReason set             refused
//	finishReason SAFETY, IMAGE_SAFETY,
//	  PROHIBITED_CONTENT, IMAGE_PROHIBITED_CONTENT,
//	  BLOCKLIST, SPII, RECITATION,
//	  IMAGE_RECITATION                         refused
//	no image part, finishReason NO_IMAGE,
//	  STOP (a text-only answer), MAX_TOKENS,
//	  LANGUAGE                                 failed, not retried ("try rephrasing it"):
//	                                           the same prompt would most likely fail again
//	no image part, any other finish reason
//	  (IMAGE_OTHER, OTHER, ...), no candidate  failed, retryable: a glitch
//
// Thought parts (thought: true) are skipped. An answer of more image
// parts than provider.MaxAnswerImages (16) is a bad answer, not
// retried, before any is decoded: each would be an image of the task,
// stored all at once. HTTP errors are
// google.rpc.Status bodies: 400 INVALID_ARGUMENT whose ErrorInfo reason
// is API_KEY_INVALID, FAILED_PRECONDITION (billing, region), 401, 403
// and 404 are operator errors (not retried; the user reads "the image
// service is misconfigured"); 429 RESOURCE_EXHAUSTED, 408 and 5xx are
// retried within the call (Config.MaxRetries), waiting the RetryInfo
// retryDelay of the body (or Retry-After) on the injected clock, never
// past the context's deadline; other 400s are rejections. Google's
// message goes to the logged cause (ModelError.Err), never to the user.
package gemini
