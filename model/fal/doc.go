// Package fal is the imagegen.Model adapter for fal.ai's queue API,
// authenticated with "Authorization: Key <key>" (the scheme word is Key,
// not Bearer). The default model is fal-ai/flux/dev (FLUX.1 [dev]);
// Plan records "fal/<model>" and Config.Cost on the task. The default
// cost is 1 credit (of 1–3): fal bills flux/dev per megapixel, among the
// cheaper hosted image models, and one generation asks for one image of
// about a megapixel. Set Config.Cost for dearer endpoints. The task's
// seed is sent as the input's "seed" (Plan.Seeded), so the same seed and
// prompt give the same image.
//
// # The queue
//
// One generation is four kinds of call on https://queue.fal.run:
//
//	submit  POST {BaseURL}/{owner}/{app}[/{path}]              the model input; answers request_id and the URLs below
//	status  GET  {BaseURL}/{owner}/{app}/requests/{id}/status  202 IN_QUEUE, 202 IN_PROGRESS, then 200 COMPLETED (?logs=0)
//	result  GET  {BaseURL}/{owner}/{app}/requests/{id}         the model output, or the request's failure
//	cancel  PUT  {BaseURL}/{owner}/{app}/requests/{id}/cancel  when Generate gives up before COMPLETED
//
// Status, result and cancel use owner/app without the endpoint's path
// (and keep a workflows/ or comfy/ namespace). The URLs the submit
// answers are used when they are under BaseURL; otherwise the adapter
// builds them, so the key never goes to another host. The status is
// polled every Config.PollInterval (default 1 s) on the injected clock.
// When the context ends, or its deadline would pass before the next
// poll, Generate returns a retryable error (a deadline reads "did not
// answer in time"); whenever it gives up on a request before COMPLETED
// (that, or a poll that failed), it sends one cancel with a short
// context of its own, and logs the outcome (CANCELLATION_REQUESTED,
// ALREADY_COMPLETED, ...). Queue progress is logged at debug level.
//
// # Aspect ratios
//
// flux/dev takes image_size as a named preset or as {width, height}.
// Every ratio is sent as a size of exactly that ratio: a preset where
// one exists, else a custom size. The answer is centre-cropped to the
// exact ratio should a model answer another size.
//
//	ratio   image_size sent                result
//	1:1     "square_hd"                    1024x1024
//	4:3     "landscape_4_3"                1024x768
//	3:4     "portrait_4_3"                 768x1024
//	16:9    "landscape_16_9"               1024x576
//	9:16    "portrait_16_9"                576x1024
//	3:2     {"width":1248,"height":832}    1248x832
//	2:3     {"width":832,"height":1248}    832x1248
//
// auto (the API's rule, docs/api.md) is 1:1 ("square_hd") for
// text-to-image, the only scene this adapter runs.
//
// # Image-to-image
//
// Not supported: the documented input of fal-ai/flux/dev takes no
// reference image, so Plan refuses image-to-image with a
// *imagegen.ValidationError on field "scene".
//
// # Results
//
// The output's images[].url point to fal's CDN (https://*.fal.media,
// public hosts the guarded fetcher allows) and are downloaded through
// Config.Fetcher (required; use *fetch.Fetcher) with
// provider.DownloadResult; a data: URI (sync_mode answers) is decoded
// in place. The request asks for one image, with enable_safety_checker
// true, in Config.OutputFormat (jpeg by default, as fal's example does).
//
// # Failures
//
// Every error is a *imagegen.ModelError:
//
//	has_nsfw_concepts true for every image             refused ("withheld by the provider's safety checker")
//	model error type content_policy_violation (422)    refused
//	401, 403 (bad key, no access), 404 (unknown app)   operator error: not retried, "the image service is misconfigured"
//	422 validation, 400 bad_request                    rejected, not retried
//	429, 5xx (runner_*, internal_error, timeouts)      retried within the call (Config.MaxRetries), honouring
//	                                                   Retry-After on the injected clock, never past the deadline
//	X-Fal-Retryable: true|false                        overrides the status
//	COMPLETED with error/error_type                    the result's failure, classified as above, fetched once
//
// fal's own words (detail, error_type) go to the logged cause
// (ModelError.Err), with the key scrubbed out, never to the user.
package fal
