package imagegen

import (
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Status is the state of a task (docs/api.md, "Task states").
type Status string

// The four task states.
const (
	StatusPending    Status = "pending"
	StatusProcessing Status = "processing"
	StatusSuccess    Status = "success"
	StatusFailed     Status = "failed"
)

// Terminal reports whether no transition leaves s.
func (s Status) Terminal() bool { return s == StatusSuccess || s == StatusFailed }

// Valid reports whether s is one of the four states.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusProcessing, StatusSuccess, StatusFailed:
		return true
	}
	return false
}

// CanTransition reports whether a task may move from s to next:
//
//	pending    -> processing  (a worker claims it)
//	pending    -> failed      (cancelled or expired before it ran)
//	processing -> success     (the lease holder stores the images)
//	processing -> failed      (the lease holder gives up; refunded)
//	processing -> pending     (lease expired, or a retryable error)
//
// Terminal states are final. Stores apply every change as a
// compare-and-set against the current state.
func (s Status) CanTransition(next Status) bool {
	switch s {
	case StatusPending:
		return next == StatusProcessing || next == StatusFailed
	case StatusProcessing:
		return next == StatusSuccess || next == StatusFailed || next == StatusPending
	}
	return false
}

// Scene says what kind of generation a request asks for.
type Scene string

// The two scenes of docs/api.md, "Submit a task".
const (
	SceneTextToImage  Scene = "text-to-image"
	SceneImageToImage Scene = "image-to-image"
)

// AspectRatio is the requested shape of the image.
type AspectRatio string

// The allowed aspect ratios; AspectAuto is the default.
const (
	AspectAuto AspectRatio = "auto"
	Aspect1x1  AspectRatio = "1:1"
	Aspect3x2  AspectRatio = "3:2"
	Aspect2x3  AspectRatio = "2:3"
	Aspect9x16 AspectRatio = "9:16"
	Aspect16x9 AspectRatio = "16:9"
	Aspect3x4  AspectRatio = "3:4"
	Aspect4x3  AspectRatio = "4:3"
)

// AspectRatios lists every concrete ratio (all but auto), in a fixed order.
func AspectRatios() []AspectRatio {
	return []AspectRatio{Aspect1x1, Aspect3x2, Aspect2x3, Aspect9x16, Aspect16x9, Aspect3x4, Aspect4x3}
}

// Size returns the ratio as width and height units (16:9 gives 16, 9).
// It returns 0, 0 for auto or an unknown value.
func (a AspectRatio) Size() (w, h int) {
	switch a {
	case Aspect1x1:
		return 1, 1
	case Aspect3x2:
		return 3, 2
	case Aspect2x3:
		return 2, 3
	case Aspect9x16:
		return 9, 16
	case Aspect16x9:
		return 16, 9
	case Aspect3x4:
		return 3, 4
	case Aspect4x3:
		return 4, 3
	}
	return 0, 0
}

// Valid reports whether a is auto or one of the concrete ratios.
func (a AspectRatio) Valid() bool {
	w, _ := a.Size()
	return a == AspectAuto || w > 0
}

// NearestAspectRatio returns the allowed ratio closest to width:height
// (compared on a log scale, so 2:1 and 1:2 are equally far from 1:1).
func NearestAspectRatio(width, height int) AspectRatio {
	if width <= 0 || height <= 0 {
		return Aspect1x1
	}
	target := float64(width) / float64(height)
	best, bestDist := Aspect1x1, -1.0
	for _, a := range AspectRatios() {
		w, h := a.Size()
		r := float64(w) / float64(h)
		d := r / target
		if d < 1 {
			d = 1 / d
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = a, d
		}
	}
	return best
}

// Limits on a generation request (docs/api.md, "Limits").
const (
	MaxPromptChars = 2000
	MaxImageInputs = 8
	MaxURLLength   = 2048
)

// Request is the body of the submit operation (docs/api.md, "Submit a task").
type Request struct {
	Scene       Scene       `json:"scene"`
	Prompt      string      `json:"prompt"`
	AspectRatio AspectRatio `json:"aspect_ratio,omitempty"`
	ImageInput  []string    `json:"image_input,omitempty"`
	// CallbackURL is an optional extension: when the task ends, its body
	// is POSTed there, signed (package webhook). Absolute https URL;
	// http too when the server allows insecure callbacks.
	CallbackURL string `json:"callback_url,omitempty"`
	// Seed is an optional extension: the random seed of the generation,
	// 0 to MaxSeed. Models that honour seeds (Plan.Seeded) get it; when
	// absent, Service.Submit draws one and records it on the task, so any
	// image can be made again.
	Seed *int64 `json:"seed,omitempty"`
	// CallbackEvents is an optional extension: which task events are
	// POSTed to CallbackURL (default: completed only).
	CallbackEvents []CallbackEvent `json:"callback_events,omitempty"`
}

// Normalize fills defaults: an empty aspect ratio becomes auto.
func (r *Request) Normalize() {
	if r.AspectRatio == "" {
		r.AspectRatio = AspectAuto
	}
}

// Validate checks every rule of the interface and returns a
// *ValidationError naming the first bad field. It checks the URLs'
// syntax only: Service.Submit also refuses those whose host the
// service's fetcher plainly refuses (Config.ImageInputGuard).
func (r Request) Validate() error {
	_, err := r.validate(nil)
	return err
}

// validate is Validate, with each image_input URL's host asked of guard
// (nil: none) as well; it also returns the callback URL, parsed (nil
// without one), so that the service applies its own rules to it
// (checkCallback) without parsing it again.
func (r Request) validate(guard HostGuard) (callback *url.URL, err error) {
	switch r.Scene {
	case SceneTextToImage, SceneImageToImage:
	case "":
		return nil, invalid("scene", "is required")
	default:
		return nil, invalid("scene", "must be one of text-to-image, image-to-image")
	}
	if !utf8.ValidString(r.Prompt) {
		return nil, invalid("prompt", "must be valid UTF-8")
	}
	switch n := utf8.RuneCountInString(r.Prompt); {
	case n == 0:
		return nil, invalid("prompt", "is required")
	case n > MaxPromptChars:
		return nil, invalid("prompt", "must be at most %d characters (got %d)", MaxPromptChars, n)
	case strings.TrimFunc(r.Prompt, blank) == "":
		return nil, invalid("prompt", "must not be only white space or invisible characters")
	case strings.IndexByte(r.Prompt, 0) >= 0:
		// No store may be able to keep it: PostgreSQL's text and jsonb
		// refuse U+0000, which failed the submit with a server error
		// (and every other submit of its group-committed batch).
		return nil, invalid("prompt", "must not contain the NUL character (U+0000)")
	}
	if r.AspectRatio != "" && !r.AspectRatio.Valid() {
		return nil, invalid("aspect_ratio", "must be one of auto, 1:1, 3:2, 2:3, 9:16, 16:9, 3:4, 4:3")
	}
	if r.CallbackURL != "" {
		var problem string
		if callback, problem = checkURL(r.CallbackURL); problem != "" {
			return nil, invalid("callback_url", "%s", problem)
		}
	}
	if r.Seed != nil && (*r.Seed < 0 || *r.Seed > MaxSeed) {
		return nil, invalid("seed", "must be a whole number from 0 to %d", int64(MaxSeed))
	}
	if err := checkCallbackEvents(r.CallbackEvents, r.CallbackURL != ""); err != nil {
		return nil, err
	}
	if r.Scene == SceneTextToImage {
		if r.ImageInput != nil {
			return nil, invalid("image_input", "is not accepted for scene text-to-image")
		}
		return callback, nil
	}
	switch n := len(r.ImageInput); {
	case n == 0:
		return nil, invalid("image_input", "is required for scene image-to-image (1 to %d URLs)", MaxImageInputs)
	case n > MaxImageInputs:
		return nil, invalid("image_input", "must hold at most %d URLs (got %d)", MaxImageInputs, n)
	}
	for i, raw := range r.ImageInput {
		u, problem := checkURL(raw)
		if problem == "" && guard != nil {
			problem = refusedHost(guard, u)
		}
		if problem != "" {
			return nil, invalid("image_input", "item %d %s", i, problem)
		}
	}
	return callback, nil
}

// refusedHost says what is wrong with u's host under guard: "" when
// guard does not plainly refuse it.
func refusedHost(guard HostGuard, u *url.URL) string {
	if what, refused := guard.RefusedHost(u.Hostname()); refused {
		return "must be a public address (not " + what + ")"
	}
	return ""
}

// checkURL parses a URL of a request and says what is wrong with it, if
// anything ("" for nothing).
func checkURL(raw string) (*url.URL, string) {
	if len(raw) > MaxURLLength {
		return nil, "is longer than 2048 bytes"
	}
	if !utf8.ValidString(raw) {
		// url.Parse keeps such bytes, but no store keeps them as they
		// are: PostgreSQL's text refuses them (a callback_url failed
		// the submit with a server error) and the JSON a store keeps a
		// request as turns them into U+FFFD, another URL than was given.
		return nil, "must be valid UTF-8"
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return nil, "must be an absolute http or https URL"
	}
	if strings.ContainsAny(u.Hostname(), "[]") {
		// url.Parse takes "https://]" or "http://a]b/" (Hostname drops
		// only the brackets of an IPv6 literal), but no transport can
		// split such a host from its port: every fetch or delivery
		// would fail.
		return nil, "must be an absolute http or https URL"
	}
	if u.User != nil {
		return nil, "must not carry user credentials"
	}
	if p := u.Port(); p != "" { // url.Parse checks it is digits, not that a connection can use it
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, "must have a port from 1 to 65535"
		}
	}
	return u, ""
}

// Task is one generation task as the store keeps it.
type Task struct {
	ID      string
	Owner   string  // user id; only the owner can see the task
	Request Request // as submitted, normalised
	Model   string  // the model chosen at submit (Plan.Model)
	Cost    int64   // credits charged at submit
	// RequestID is the id of the API request that submitted the task
	// (WithRequestID), so that its life is logged with it; "" if none.
	RequestID string

	Status Status
	// Attempt counts claims. It is the fencing token: the worker that
	// claimed attempt n is the only one that may finish the task while
	// Attempt == n and the task is processing.
	Attempt int
	// Released counts claims given back unfinished at a worker's
	// shutdown (Store.ReleaseTask). They do not count against
	// Config.MaxAttempts: the task has had Attempt - Released attempts.
	Released   int
	LeaseUntil time.Time // when the current lease ends (processing only)
	RunAfter   time.Time // a pending task is not claimed before this time
	Images     []string  // image ids, on success
	Error      string    // user-facing reason, on failure
	ErrorCode  ErrorCode // machine-readable reason, on failure
	LastError  string    // the last attempt's error, for operators
	Refunded   bool      // the cost was given back (failed tasks; not one whose cancel kept a started charge)
	CreatedAt  time.Time
	UpdatedAt  time.Time
	StartedAt  time.Time // when a worker first claimed it (zero before)
	FinishedAt time.Time // when it reached success or failed
	ExpiresAt  time.Time // when a finished task and its images are removed
	// Progress is how far the current attempt's generation has come,
	// from 0 to 1, as its model reported it (Store.SetProgress); 0 when
	// it has reported nothing, and again at each new claim. Meaningful
	// while the task is processing.
	Progress float64
}

// CountedAttempts is how many of the task's attempts count against
// Config.MaxAttempts: claims released at a worker's shutdown do not.
func (t *Task) CountedAttempts() int { return t.Attempt - t.Released }

// Image is the record of one generated picture. Its bytes are in the
// store's BlobStore, under the image's ID.
type Image struct {
	ID          string // set by the store's caller before CompleteTask
	TaskID      string
	Owner       string    // the task's owner
	ContentType string    // e.g. "image/png"
	Size        int64     // bytes
	Checksum    string    // hex SHA-256 of the bytes
	CreatedAt   time.Time // set by the store (when the task finished)
	ExpiresAt   time.Time // set by the store
}

// ErrorCode says why a task failed, so that clients can act on it.
type ErrorCode string

// Failure codes.
const (
	CodeContentPolicy     ErrorCode = "content_policy"      // the model refused the prompt or images; not retried
	CodeInvalidImageInput ErrorCode = "invalid_image_input" // a reference image could not be fetched or decoded
	CodeTimeout           ErrorCode = "timeout"             // generation took longer than allowed
	CodeProviderError     ErrorCode = "provider_error"      // the model provider failed, after retries
	CodeCancelled         ErrorCode = "cancelled"           // cancelled by its owner
	CodeInternal          ErrorCode = "internal"            // anything else (e.g. workers kept dying)
)

// Failure is why a task failed: a code and a message for the user.
type Failure struct {
	Code    ErrorCode
	Message string
}

// CancelledMessage is the error of a cancelled task (code CodeCancelled).
const CancelledMessage = "cancelled"

// blank reports whether r shows nothing in a prompt: white space, a
// control character, or one that Unicode says is drawn as nothing
// (Default_Ignorable_Code_Point, less white space: the format characters,
// Cf, such as the zero-width space, joiners, the byte order mark and the
// soft hyphen; the variation selectors; the Hangul fillers). A prompt
// made only of these describes nothing, and would be charged for a
// generation that a provider refuses or makes at random. The format
// characters drawn as a sign of their own (Prepended_Concatenation_Mark:
// the Arabic number sign, the end of ayah) are not blank.
func blank(r rune) bool {
	switch {
	case unicode.IsSpace(r), unicode.IsControl(r):
		return true
	case unicode.Is(unicode.Prepended_Concatenation_Mark, r):
		return false
	}
	return unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}
