// Package a1111 is the imagegen.Model adapter for servers that speak the
// sdapi of AUTOMATIC1111's Stable Diffusion web UI (the web UI started
// with --api, Forge, SD.Next): POST /sdapi/v1/txt2img and
// /sdapi/v1/img2img on the operator's own server (Config.BaseURL,
// required; the program that starts the adapter reads it from
// A1111_BASE_URL). The server is the operator's, often on a private
// address, and is called directly, not through the guarded fetcher;
// reference images named by users still come only through
// Config.Fetcher. When the server runs with --api-auth, Config.APIKey
// (A1111_API_KEY) is its "user:password", sent as Basic auth.
//
// # Model and cost
//
// Plan records "a1111", or "a1111/<checkpoint>" when Config.Checkpoint
// names one (sent as override_settings.sd_model_checkpoint, restored
// afterwards, so other clients keep theirs; the server loads it on
// first use, which takes a while, and falls back on its own when it has
// no such checkpoint). The default cost is 1 credit. The task's seed is
// sent as seed (Plan.Seeded); the seed the answer's info reports comes
// back as the image's Seed, which the service records on the task when
// the server used another.
//
// # Sizes
//
// width and height are of exactly the ratio, multiples of 8, with about
// the area of a Config.Resolution square (1024 for SDXL, 512 for
// SD 1.5): at 1024, 1:1 1024x1024, 16:9 1408x792, 4:3 1184x888, 3:2
// 1248x832 and their portraits (provider.ExactSize). auto is 1:1, or for
// image-to-image the ratio nearest the reference. An answer of another
// size is centre-cropped to the ratio.
//
// # Image-to-image
//
// One reference, fetched through Config.Fetcher and sent as base64 in
// init_images (PNG, JPEG or WebP; others converted to PNG), with
// denoising_strength Config.DenoisingStrength (default 0.6: the
// picture keeps the reference's layout and colours, and follows the
// prompt in its detail; 0.3 stays close, 0.8 changes much) and
// resize_mode 1 (crop and resize: the reference fills the size without
// distortion).
//
// # Progress and cancel
//
// Each generation runs under its own force_task_id
// ("imagegen-<task>-<attempt>"). While it runs, and the service follows
// its progress (Generation.Progress), the adapter reads the server's
// progress, GET /sdapi/v1/progress?skip_current_image=true, every
// Config.ProgressInterval (1 s), and reports its progress (0 to 1, from
// the sampling steps) only when the job it describes is this one. That
// answer names no job (state.job is the kind, "scripts_txt2img"), and
// the server runs one job at a time for all its clients: while this one
// waits behind another client's (another user's task, perhaps), it
// reports that job. So each read is made between two of
// POST /internal/progress about this job's id, the web UI's own route
// for one job; when both say the job is the one running, it ran all
// along in between and the read was its. Until the job starts, only
// that route is asked (one call a second); while it runs, two calls a
// second. A server without /internal/progress reports no progress.
// When the context ends before the answer, the adapter asks the same
// route whether its job is the one running, and only then sends
// POST /sdapi/v1/interrupt: a job still queued, or another client's,
// is left alone.
//
// # Timeouts
//
// txt2img and img2img answer only when the image is done, so the call
// lasts as long as the generation. Its bound is the context's deadline,
// the service's GenerateTimeout, which an operator may set well above
// 3 minutes for a slow GPU: the default HTTP client
// (provider.ContextBoundHTTPClient) bounds connects and TLS handshakes
// to 10 s, and sets no timeout on the answer of its own, which would
// otherwise cut the call while the GPU still generates. A context
// without a deadline is bounded by Config.MaxDuration (30 min). When
// the call is cut off by our side (the context ends, or an injected
// client's own Timeout passes after the call was sent), the job is
// interrupted as above and the call is not sent again within the
// attempt: a second POST would queue the same generation again behind
// the first.
//
// # Failures
//
// Every error is a *imagegen.ModelError. 401 and 403 (the credentials)
// and 404 (a server without --api) are operator errors; 422 is a
// rejection; 500 (the generation raised: out of memory, say) and the
// server down or restarting (no answer, 502, 503) are retried within
// the call (Config.MaxRetries) and then by the task queue. A call the
// server took whose answer was lost (cut short, or timed out by the
// client) is not sent again within the call (provider.ErrMaybeAccepted);
// the task queue's next attempt may run it again. An sdapi
// server refuses no content. The server's words go to the logged cause
// (ModelError.Err), never to the user, and the password never shows,
// as configured nor in the base64 of the Basic header a page may echo.
package a1111
