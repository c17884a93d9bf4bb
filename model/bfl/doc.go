// Package bfl is the imagegen.Model adapter for Black Forest Labs' FLUX
// API (https://api.bfl.ai), authenticated with the header
// "x-key: <key>" (the program that starts the adapter reads the key
// from BFL_API_KEY; the adapter reads no environment).
//
// # Models and costs
//
// Plan records "bfl/<model>" and the model's cost in credits (1 to 3,
// by list price; Config.Cost overrides it). Every model takes the
// task's seed (Plan.Seeded); a Ready result's result.seed comes back as
// the image's Seed, which the service records on the task when the
// API used another.
//
//	model                cost  size sent                 scenes
//	flux-pro-1.1         2     width, height             text-to-image (the default)
//	flux-pro-1.1-ultra   3     aspect_ratio (~4 MP)      text-to-image
//	flux-dev             1     width, height             text-to-image
//	flux-kontext-pro     2     aspect_ratio (~1 MP)      text-to-image, image-to-image (one reference)
//
// # Submit and poll
//
// POST {BaseURL}/v1/{model} answers a task id and a polling_url; the
// adapter reads the result there every Config.PollInterval (500 ms, as
// BFL's examples do), on the injected clock, through Pending until the
// status is Ready, then downloads result.sample (a signed URL that
// expires after 10 minutes) at once through Config.Fetcher (the guarded
// fetcher). A 429 (more than 24 active tasks) or 5xx is retried within
// the call, honouring Retry-After. The polling_url is followed only
// when it is https on one of the API's own hosts (api.bfl.ai and its
// regional api.<region>.bfl.ai) or on the configured base URL's scheme
// and host, and reads /v1/get_result; any other (a spoofed answer) is
// replaced by {BaseURL}/v1/get_result?id=<id>, so the key is never sent
// elsewhere. The API has no cancel: when the context ends, or its
// deadline would pass before the next poll, Generate returns a
// retryable error (a deadline reads "did not answer in time") and the
// task is left to finish at BFL. A Pending task's progress, when the
// API reports one, is passed to Generation.ReportProgress.
//
// # Sizes
//
// flux-pro-1.1 and flux-dev take width and height, multiples of 32
// from 256 to 1440: about a megapixel of the exact ratio (1:1
// 1024x1024, 4:3 1152x864, 3:2 1248x832 and their portraits), except
// 16:9 and 9:16, sent as 1344x768 and centre-cropped to 1344x756. The
// others take aspect_ratio; their answers, of sizes of the model's own
// near the ratio, are centre-cropped to it exactly. For image-to-image
// with auto, Kontext gets no aspect_ratio, so that it follows the
// reference, and the answer is cropped to the allowed ratio nearest the
// reference. output_format is png, so that answers can be cropped.
// Kontext's reference is fetched through the Fetcher and sent as
// base64 input_image (PNG, JPEG or WebP; others are converted to PNG
// when they can be).
//
// # Failures
//
// Every error is a *imagegen.ModelError. Request Moderated (the prompt
// or reference refused) and Content Moderated (the image withheld) are
// content refusals (Refused: the task fails as content_policy and is
// refunded, never retried). Error and Task not found are provider
// failures, retryable. 401 and 403 (the key), 402 (no credits) and 404
// are operator errors; a 422 is a rejection (invalid input when it
// names input_image). BFL's words go to the logged cause
// (ModelError.Err), never to the user, and the key never shows.
package bfl
