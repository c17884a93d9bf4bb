// Package replicate is the imagegen.Model adapter for Replicate's HTTP
// API: it runs an official model with
// POST {BaseURL}/models/{owner}/{name}/predictions, authenticated with
// "Authorization: Bearer <token>" (an r8_... API token; the program that
// starts the adapter reads it from REPLICATE_API_TOKEN, the adapter
// reads no environment).
//
// # Model and cost
//
// The default model is black-forest-labs/flux-kontext-pro, which does
// text-to-image and image-to-image. Plan records
// "replicate/<owner>/<name>" and Config.Cost on the task: default 2
// (flux-kontext-pro is billed per image at about gpt-image-1's price);
// set 1 for a cheap model such as black-forest-labs/flux-schnell. Any
// official model that takes the inputs prompt, aspect_ratio and
// output_format (the FLUX family) can be configured; it does
// image-to-image only when Config.ReferenceInput names its image input.
//
// # Predictions
//
// The create call carries "Prefer: wait=N", N at most 60 s
// (Config.SyncWait) and ending 5 s before the context's deadline (none
// when less than 1 s would be left), and "Cancel-After" set to the time
// left until the deadline (at least 5 s; a context without a deadline
// has Config.MaxDuration's, 30 min by default), so that Replicate stops
// a prediction nobody waits for even if our cancel never arrives. 201 and
// 202 are both success. A prediction still starting or processing is
// read again at urls.get every Config.PollInterval (1 s), waiting on
// the injected clock, until it is succeeded, failed, canceled or
// aborted. urls.get and urls.cancel are used when they are under
// BaseURL; otherwise (a proxy) the same paths are built from the id, so
// the token never goes to another host. When the adapter stops
// following a running prediction (the context ends, the next poll would
// come after the deadline, a read keeps failing) it cancels it
// (POST urls.cancel, once, on a context of its own) and fails
// retryably. That holds for a context that ends while the create call
// is under way, before any prediction id is known: the call goes on for
// up to 10 s more to learn the id of the prediction it made, which is
// then cancelled, rather than left to run (and be billed) to its end; a
// create that fails has nothing to cancel. The outcome of every cancel
// is in the error's logged cause.
//
// # Aspect ratios
//
// Every ratio of the interface is sent as the model's aspect_ratio
// input. FLUX Kontext answers about one megapixel in sizes of its own,
// which the adapter centre-crops to the exact ratio where they are only
// near (sizes as Black Forest Labs' Kontext code lists them; the adapter
// reads the real size of each answer):
//
//	ratio   aspect_ratio sent   answer      result
//	1:1     "1:1"               1024x1024   1024x1024
//	3:2     "3:2"               1248x832    1248x832
//	2:3     "2:3"               832x1248    832x1248
//	16:9    "16:9"              1392x752    1328x747 (crop)
//	9:16    "9:16"              752x1392    747x1328 (crop)
//	4:3     "4:3"               1184x880    1172x879 (crop)
//	3:4     "3:4"               880x1184    879x1172 (crop)
//
// auto (the API's rule, docs/api.md): text-to-image sends "1:1".
// Image-to-image sends "match_input_image", so that the model follows
// the reference, and the answer is centre-cropped to the allowed
// ratio nearest the reference (the allowed ratio nearest its own size
// when the reference's size cannot be read: WebP). output_format is
// "png", so that answers can be cropped.
//
// # Reference images
//
// flux-kontext-pro takes one reference image, as input_image; Plan
// refuses image-to-image with more than one (*imagegen.ValidationError
// on "image_input"). The reference is fetched through Config.Fetcher
// (use the guarded fetcher, *fetch.Fetcher) and sent as a data: URI up
// to 256 KB, as Replicate advises, else as its https URL (already
// checked by the fetcher). PNG, JPEG, WebP and GIF are accepted;
// anything else fails the task as invalid input.
//
// # Outputs
//
// output is one URL (flux-kontext-pro, flux-1.1-pro) or a list of URLs
// (flux-schnell); each is downloaded through Config.Fetcher with
// provider.DownloadResult, from Config.OutputHosts only (default
// replicate.delivery and its subdomains; the guarded fetcher must be
// allowed to reach them). Config.Fetcher is therefore required.
//
// # Failures
//
// Every error is a *imagegen.ModelError. A prediction that ends failed
// with an error that reads as a content refusal ("NSFW content
// detected", "flagged as sensitive", ...) is Refused, never retried, and
// the user reads "the prompt or image was rejected by the provider's
// safety system"; other failed, canceled and aborted predictions are
// retryable. HTTP errors are problem JSON: 401 (bad token), 402
// (billing), 403 and 404 (unknown model) are operator errors (not
// retried; the user reads "the image service is misconfigured"; a
// fallback chain moves on); 422 is a rejection (invalid input when it
// names an image input); 429 and 5xx are retried within the call
// (Config.MaxRetries) honouring Retry-After, or the "resets in ~30s" of
// the body, on the injected clock and never past the context's
// deadline. A retried create may, after a 5xx, start a second
// prediction. Replicate's words go to the logged cause
// (ModelError.Err), never to the user, and the token never shows.
package replicate
