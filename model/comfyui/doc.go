// Package comfyui is the imagegen.Model adapter for ComfyUI, run by the
// operator on their own GPUs (Config.BaseURL, required; the program that
// starts the adapter reads it from COMFYUI_BASE_URL). The server is the
// operator's, often on a private address, and is called directly, not
// through the guarded fetcher; reference images named by users still
// come only through Config.Fetcher. ComfyUI has no auth of its own;
// Config.APIKey (COMFYUI_API_KEY), when set, is sent as
// "Authorization: Bearer" on every call, the websocket's included, for
// an authenticating proxy in front of it.
//
// # A generation
//
//	upload  POST /upload/image          each reference (multipart image, type=input, overwrite=true)
//	ws      GET  /ws?clientId=<id>      opened first, so that no message of the prompt is missed
//	prompt  POST /prompt                {"prompt": <the workflow, filled in>, "client_id": <id>, "prompt_id": <a fresh UUID>}
//	        (the websocket: progress value/max, then executing with node null: the prompt is done)
//	history GET  /history/{prompt_id}   outputs[*].images[] of the prompt
//	view    GET  /view?filename=&subfolder=&type=
//
// Each generation has a client_id of its own, so its socket carries only
// its prompt's messages, and sends a prompt_id of its own (ComfyUI
// 0.3.45 and later queue the prompt under it; older servers ignore it
// and answer an id of theirs, which the adapter then follows); progress
// (value of max) goes to Generation.ReportProgress. When the websocket cannot be opened (its
// handshake unanswered within Config.DialTimeout, 10 s, included), or
// breaks, the prompt is followed by reading its history every
// Config.PollInterval (1 s) on the injected clock instead (without
// progress). While on the socket, the history is read every
// Config.HistoryCheck (30 s) as well, so that a connection that died
// without closing, and missed the prompt's end, does not hold the
// generation until its deadline. The first image of the output nodes (by node id; a
// SaveImage's before a PreviewImage's) is the result; one of another
// ratio than asked is centre-cropped to it.
//
// # Workflows
//
// Built in, on Config.Checkpoint (the model id of
// "-model comfyui/<checkpoint>", default sd_xl_base_1.0.safetensors):
// text-to-image is CheckpointLoaderSimple → CLIPTextEncode (prompt and
// negative prompt) → EmptyLatentImage of the task's ratio → KSampler
// (the task's seed, 25 steps, cfg 7, euler) → VAEDecode → SaveImage;
// image-to-image loads the uploaded reference (LoadImage), scales and
// centre-crops it to the size (ImageScale) and starts from its
// VAEEncode latent, at denoise 0.6. The latent is of exactly the ratio,
// sides multiples of 8, about Config.Resolution² (1024: 1:1 1024x1024,
// 16:9 1408x792, 4:3 1184x888, 3:2 1248x832). Both are in this
// package's workflows/ directory, as examples.
//
// An operator's own workflows (Config.Workflows; the command line reads
// <name>.json and <name>.img2img.json from COMFYUI_WORKFLOWS for
// "-model comfyui/<name>", see ReadWorkflows) are API-format exports
// ("Save (API)") with placeholders as string values:
//
//	{{prompt}}           the task's prompt (required; may stand inside a longer text)
//	{{negative_prompt}}  Config.NegativePrompt (may stand inside text)
//	{{checkpoint}}       Config.Checkpoint (may stand inside text)
//	{{width}} {{height}} the size for the task's ratio, as numbers (whole values only)
//	{{seed}}             the task's seed, as a number (whole value only); a workflow
//	                     without it takes no seed (Plan.Seeded false)
//	{{image}}            the first reference's uploaded name (required for image-to-image);
//	{{image_2}} … {{image_9}}  further references: the workflow takes exactly that many
//
// New refuses a workflow that is not the API format, lacks {{prompt}}
// (or {{image}} for image-to-image) or names an unknown placeholder.
//
// # Cancel
//
// When the context ends before the prompt does, the adapter reads
// GET /queue: a pending prompt is deleted from it (POST /queue
// {"delete": [id]}), the running one interrupted (POST /interrupt
// {"prompt_id": id}: the adapter interrupts only when its prompt is the
// one running, and newer servers check the id themselves). So is a
// prompt the adapter stops following for another reason (its history
// that cannot be read, after the call's retries): the task, retried,
// queues a prompt again, and the first must not take the GPU meanwhile;
// the error stays as it was classified, the outcome in its cause.
//
// # Failures
//
// Every error is a *imagegen.ModelError. A workflow ComfyUI refuses
// (400, node_errors: a checkpoint or node the server lacks, a bad
// input) is the operator's configuration error: Misconfigured, not
// retried, the node errors in the logged cause; one taken with
// node_errors is taken off the queue again, and so is it. A workflow
// that saves no image is likewise. ComfyUI down or restarting (no
// answer, 502, 503) is retried like any provider outage, within the
// call (Config.MaxRetries) and then by the task queue; a prompt that
// failed while it ran (execution_error: out of memory, say) or was
// interrupted by someone else is retryable. An answer lost in transit
// after the server took the call (a 2xx cut short, or the HTTP client's
// own timeout) ends a POST /prompt at once (provider.ErrMaybeAccepted,
// retryable by the task queue): a second one would queue a second run.
// The prompt the server may have queued is then stopped, so that it
// does not take the GPU for nobody while the task runs again, and so is
// one whose 2xx answer is not the documented one or whose context ended
// during the call: the adapter reads GET /queue and takes off the queue,
// or interrupts, the item that is its prompt, by the prompt_id it sent
// or by the generation's client_id in the item's extra_data. Both are
// the generation's alone (one POST /prompt a generation); the prompt_id
// alone would miss the prompt on a server older than 0.3.45, the
// client_id alone on none, so the adapter looks for either. A prompt the
// server had not queued yet when the queue was read (the HTTP client
// gave up while the server still validated it) is not found, and runs.
// The upload of a reference is sent again instead (provider.Replayable):
// its file, under this generation's fixed name with overwrite, is only
// replaced. ComfyUI refuses no content. The server's words go to the logged cause, never to the
// user, and the token never shows.
package comfyui
