package imagegen

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// MaxIdempotencyKey is the longest idempotency key (the Idempotency-Key
// header of a submit), in bytes.
const MaxIdempotencyKey = 255

// ValidIdempotencyKey reports whether k is a usable idempotency key: 1
// to MaxIdempotencyKey printable ASCII characters, not starting or ending
// with a space (HTTP drops a header value's outer spaces, so such a key
// would not arrive as sent). The HTTP API refuses any other key, and the
// Go client sends none.
func ValidIdempotencyKey(k string) bool {
	if k == "" || len(k) > MaxIdempotencyKey || k[0] == ' ' || k[len(k)-1] == ' ' {
		return false
	}
	for i := range len(k) {
		if k[i] < ' ' || k[i] > '~' {
			return false
		}
	}
	return true
}

// Idempotency names one idempotent submission (SubmitIdempotent).
type Idempotency struct {
	// Key is the caller's idempotency key, per owner (ValidIdempotencyKey;
	// the HTTP API's Idempotency-Key header). "" submits without one.
	Key string
	// Fingerprint identifies the request as the caller received it (the
	// HTTP API: a hash of the body; the console: of the form's values),
	// so that a key sent again with another request is refused.
	Fingerprint string
}

// ErrIdempotencyKeyInUse: a request with the same idempotency key is
// still being handled; retry later with the same key and request.
var ErrIdempotencyKeyInUse = errors.New("imagegen: a request with this idempotency key is still in progress")

// ErrIdempotencyKeyReused: an idempotency key was sent again with another
// request. SubmitIdempotent returns it wrapped in a *ValidationError
// naming the key (errors.Is matches both it and ErrInvalidParams).
var ErrIdempotencyKeyReused = errors.New("imagegen: idempotency key already used with another request")

// idempotencyInFlight bounds how long a submission holds its key before
// a retry may take it over (a process that died while submitting).
const idempotencyInFlight = 2 * time.Minute

// DefaultIdempotencyTTL is Config.IdempotencyTTL when it is left zero.
const DefaultIdempotencyTTL = 24 * time.Hour

// TaskRetainer is a Store that says how long it keeps a finished task
// (its retention); the stores of this repository are. The Service keeps
// an idempotency record no longer than that (Config.IdempotencyTTL is
// capped at it): a record that outlived its task would have the retry
// that settles a submission of unknown outcome ask the store for the id
// of a task retention has removed, which a store that keeps no trace of
// it (the Redis store) would make and charge again.
type TaskRetainer interface {
	TaskRetention() time.Duration
}

// What a finished idempotency record holds (IdempotencyRecord.Status):
// the statuses the HTTP API recorded before the service kept these
// records, so that records written by either read alike.
const (
	onceSubmitted = 201 // Body: the Submission, as JSON (onceSubmission)
	// onceRefused is a refusal of the request (Body: onceRefusal). It is
	// no longer written (a refused request gives its key up), but
	// records of earlier versions, the HTTP API's and the service's,
	// are replayed until they expire.
	onceRefused = 422
)

// onceSubmission is a Submission as an idempotency record keeps it: the
// HTTP API's body of a submit, which records written earlier hold.
type onceSubmission struct {
	TaskID           string `json:"task_id"`
	Status           Status `json:"status"`
	CreditsUsed      int64  `json:"credits_used"`
	CreditsRemaining int64  `json:"credits_remaining"`
}

// onceRefusal is a refusal as a record of an earlier version keeps it:
// the service's ({"field","message"}), or the HTTP API's error body
// ({"error":{"message"}}), read into Error. Only read, never written.
type onceRefusal struct {
	Field   string `json:"field,omitempty"`
	Message string `json:"message,omitempty"`
	Error   struct {
		Message string `json:"message"`
	} `json:"error"`
}

// SubmitIdempotent submits owner's request as Submit does, at most once
// per idempotency key. decode turns what the caller received into the
// request (the HTTP API decodes the body; it is read once, by the
// caller); it runs only for a key not seen before, so a repeat decodes
// and validates nothing.
//
// The same key with the same fingerprint, within Config.IdempotencyTTL,
// answers the first submission's Submission and charges nothing more,
// with replayed true. Only a submission is kept. A refusal of the
// request (an error wrapping ErrInvalidParams, from decode or from the
// request's rules) keeps no record: the key is given up, so the same
// request sent again is decoded, validated and refused again (replayed
// false), and the key sent with a corrected request is a new request.
// (Keeping refusals, which cost nothing, would let any caller fill the
// store with records; records of refusals that earlier versions wrote
// are still replayed until they expire.) Outcomes that depend on more
// than the request (such as ErrInsufficientCredits before a top-up, or
// a store error before the task was made) are not kept either: the
// next try runs afresh. A store error
// that leaves the task's existence unknown (a timeout, a connection
// lost after the write, replicas that did not confirm) is answered as
// the error, then settled by looking for the task: when it exists, the
// key keeps its Submission, so a retry replays it instead of charging
// again; when the store cannot tell (the lookup fails, or the store's
// error wraps ErrOutcomeUnknown: its write may still land after the
// call), the key stays in flight (a retry gets ErrIdempotencyKeyInUse)
// for two minutes. The first retry after that settles it: the key's
// record names the task the submission asked for, and when that task
// exists the retry replays it (charging nothing; another request with
// the key is refused as above); when it does not, the retry submits
// afresh under the same task id, so that the earlier write, should it
// land later still, is refused as the id taken rather than charged; a
// retry with another fingerprint then gets the key. When the store
// refuses that id as charged already (ErrDuplicateEntry) and holds no
// task of it, the first try made the task and retention has removed it
// since (Config.IdempotencyTTL outlasts the retention of a store that is
// no TaskRetainer): the key keeps that task's Submission, replayed, and
// nothing is charged again.
// While
// the first submission is still under way the key answers
// ErrIdempotencyKeyInUse; with another fingerprint, a *ValidationError
// wrapping ErrIdempotencyKeyReused; an unusable key is a
// *ValidationError naming "Idempotency-Key". With id.Key "" it is
// decode then Submit.
func (s *Service) SubmitIdempotent(ctx context.Context, owner string, id Idempotency, decode func() (Request, error)) (sub Submission, replayed bool, err error) {
	if id.Key == "" {
		req, err := decode()
		if err != nil {
			return Submission{}, false, err
		}
		sub, err = s.Submit(ctx, owner, req)
		return sub, false, err
	}
	if !ValidIdempotencyKey(id.Key) { // an empty one never gets here: the caller meant none
		return Submission{}, false, &ValidationError{Field: "Idempotency-Key", Message: "must be 1 to 255 printable ASCII characters"}
	}
	for range 2 {
		// The task's id is chosen before the key is taken, so that the
		// key's record names the task its submission asks for: a later
		// request that finds the record expired can settle it.
		taskID := NewOwnedID(owner)
		rec, err := s.cfg.Store.BeginIdempotent(ctx, owner, id.Key, id.Fingerprint, taskID, idempotencyInFlight, s.cfg.IdempotencyTTL)
		switch {
		case err != nil:
			return Submission{}, false, fmt.Errorf("imagegen: idempotent submit: %w", err)
		case rec == nil:
			return s.submitOnce(ctx, owner, id, taskID, decode)
		case rec.Expired:
			sub, replayed, err := s.settle(ctx, owner, id, rec, decode)
			if errors.Is(err, errKeyFreed) {
				continue // the key is free now: begin this request's own submission
			}
			return sub, replayed, err
		case rec.Fingerprint != id.Fingerprint:
			return Submission{}, false, reusedKey()
		case !rec.Done:
			return Submission{}, false, ErrIdempotencyKeyInUse
		}
		sub, err = replay(rec)
		return sub, true, err
	}
	return Submission{}, false, ErrIdempotencyKeyInUse // freed and taken again meanwhile: another request has it
}

// reusedKey is the refusal of a key sent with another request.
func reusedKey() error {
	return &keyReused{ValidationError{Field: "Idempotency-Key", Message: "was already used with a different request body"}}
}

// errKeyFreed: settle gave the key up (its earlier request, another
// one, made nothing), for this request to begin afresh.
var errKeyFreed = errors.New("imagegen: idempotency key freed")

// settle settles rec, the in-flight record of id's key whose time ran
// out before its submission was settled (a store error of unknown
// outcome, or a process that died while submitting), which
// BeginIdempotent renewed for this call. The task it asked for
// (rec.TaskID) may exist: when it does, the key keeps its Submission
// (replayed to this request when it is the same one, else this one is
// refused as the key reused), so that nothing is charged again. When it
// does not, the same request submits afresh under the same task id (a
// write of the earlier attempt that lands later still is refused as the
// id taken, not charged again), and another request gets the key freed
// (errKeyFreed). When the store cannot tell, the key stays in flight.
func (s *Service) settle(ctx context.Context, owner string, id Idempotency, rec *IdempotencyRecord, decode func() (Request, error)) (Submission, bool, error) {
	made, err := s.made(ctx, owner, rec.TaskID)
	if err != nil {
		s.log.ErrorContext(ctx, "idempotent submission of unknown outcome: key kept in flight", "task_id", rec.TaskID, "err", err)
		return Submission{}, false, fmt.Errorf("imagegen: idempotent submit: look for the task of an earlier try: %w", err)
	}
	if made.TaskID == "" && rec.Fingerprint == id.Fingerprint {
		return s.submitOnce(ctx, owner, id, rec.TaskID, decode)
	}
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if made.TaskID == "" {
		if err := s.cfg.Store.AbandonIdempotent(recordCtx, owner, id.Key, rec.Fingerprint); err != nil {
			return Submission{}, false, fmt.Errorf("imagegen: idempotent submit: %w", err)
		}
		return Submission{}, false, errKeyFreed
	}
	body, _ := json.Marshal(onceSubmission(made)) // cannot fail: strings and numbers
	if err := s.cfg.Store.FinishIdempotent(recordCtx, owner, id.Key, rec.Fingerprint, onceSubmitted, body, s.cfg.IdempotencyTTL); err != nil {
		s.log.ErrorContext(ctx, "record an idempotent submission", "err", err)
	}
	if rec.Fingerprint != id.Fingerprint {
		return Submission{}, false, reusedKey()
	}
	return made, true, nil
}

// submitOnce runs the submission that holds id's key, asking the store
// for the task taskID (the one the key's record names), then records
// the task it made for replay, or gives the key up when it made none
// (a refusal of the request, or an outcome that depends on more than
// the request), or keeps the key in flight when the store cannot tell.
// The record is written even when ctx has ended (a caller that went
// away must still find what it made).
func (s *Service) submitOnce(ctx context.Context, owner string, id Idempotency, taskID string, decode func() (Request, error)) (Submission, bool, error) {
	req, err := decode()
	var sub Submission
	var asked *Task // the task the store was asked to make, when it may exist
	if err == nil {
		sub, asked, err = s.submit(ctx, owner, taskID, req, s.cfg.Store.CreateTask)
	}
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	var body []byte // the Submission to keep, or nil to give the key up
	replayed := false
	switch {
	case err == nil:
		body, _ = json.Marshal(onceSubmission(sub)) // cannot fail: strings and numbers
	case errors.Is(err, ErrInvalidParams):
		// Refused for its content: nothing was made or charged, and a
		// retry is refused again the same way (validation depends on the
		// request alone), so the key is given up rather than kept for
		// the ttl. A record for each would let anybody, without credits,
		// fill the store for free; and the key may be sent again with
		// the request corrected.
	case asked != nil && errors.Is(err, ErrOutcomeUnknown):
		// The store could not settle its write: it may still land
		// after a lookup found nothing. The key stays in flight; the
		// request that finds it expired settles it (settle).
		s.log.ErrorContext(ctx, "idempotent submission of unknown outcome: key kept in flight", "task_id", asked.ID, "err", err)
		return sub, false, err
	case asked != nil:
		// The store failed after it was asked (a timeout, replicas that
		// did not confirm): the task may exist, charged. Giving the key
		// up would let a retry charge again, so look.
		made, lookErr := s.made(recordCtx, asked.Owner, asked.ID)
		switch {
		case lookErr != nil:
			// Unknown still: the key stays in flight until its record
			// expires, so a retry is refused rather than charged twice,
			// then settled by the request that finds it expired.
			s.log.ErrorContext(ctx, "idempotent submission of unknown outcome: key kept in flight", "task_id", asked.ID, "err", lookErr)
			return sub, false, err
		case made.TaskID != "":
			body, _ = json.Marshal(onceSubmission(made))
		case errors.Is(err, ErrDuplicateEntry):
			// The store refused the id as charged already, and holds no
			// task of it: an earlier try of this key (settle asks for
			// its task's id again) made it, and retention has removed
			// it since. The key keeps that submission, replayed to
			// this request: giving the key up let the next retry
			// submit afresh and charge a second time.
			bal, balErr := s.cfg.Store.Balance(recordCtx, asked.Owner)
			if balErr != nil {
				s.log.ErrorContext(ctx, "idempotent submission whose task is gone: key kept in flight", "task_id", asked.ID, "err", balErr)
				return sub, false, err
			}
			s.log.WarnContext(ctx, "idempotent submission settled: its task was made by an earlier try and has expired", "task_id", asked.ID)
			sub, err, replayed = Submission{TaskID: asked.ID, Status: StatusPending, CreditsUsed: asked.Cost, CreditsRemaining: bal}, nil, true
			body, _ = json.Marshal(onceSubmission(sub))
		}
	}
	var recErr error
	if body != nil {
		recErr = s.cfg.Store.FinishIdempotent(recordCtx, owner, id.Key, id.Fingerprint, onceSubmitted, body, s.cfg.IdempotencyTTL)
	} else {
		recErr = s.cfg.Store.AbandonIdempotent(recordCtx, owner, id.Key, id.Fingerprint)
	}
	if recErr != nil {
		s.log.ErrorContext(ctx, "record an idempotent submission", "err", recErr)
	}
	return sub, replayed, err
}

// made returns the Submission of owner's task id when the store holds
// it (a submit whose store call failed after it was asked may have made
// it), or the zero Submission when it does not; an error when the store
// cannot tell. The balance is the owner's now, the nearest to the one
// the submit would have answered.
func (s *Service) made(ctx context.Context, owner, id string) (Submission, error) {
	got, err := s.cfg.Store.Task(ctx, owner, id)
	if errors.Is(err, ErrTaskNotFound) {
		return Submission{}, nil
	}
	if err != nil {
		return Submission{}, err
	}
	balance, err := s.cfg.Store.Balance(ctx, owner)
	if err != nil {
		return Submission{}, err
	}
	return Submission{TaskID: got.ID, Status: StatusPending, CreditsUsed: got.Cost, CreditsRemaining: balance}, nil
}

// replay is the outcome a finished record holds.
func replay(rec *IdempotencyRecord) (Submission, error) {
	switch rec.Status {
	case onceSubmitted:
		var sub onceSubmission
		if err := json.Unmarshal(rec.Body, &sub); err != nil || sub.TaskID == "" {
			return Submission{}, fmt.Errorf("imagegen: idempotency record: unreadable submission (%v)", err)
		}
		return Submission(sub), nil
	case onceRefused:
		var r onceRefusal
		if err := json.Unmarshal(rec.Body, &r); err != nil {
			return Submission{}, fmt.Errorf("imagegen: idempotency record: unreadable refusal: %w", err)
		}
		return Submission{}, &ValidationError{Field: r.Field, Message: cmp.Or(r.Message, r.Error.Message)}
	}
	return Submission{}, fmt.Errorf("imagegen: idempotency record of unknown status %d", rec.Status)
}

// keyReused is the refusal of a key sent again with another request.
type keyReused struct{ ValidationError }

func (e *keyReused) Error() string { return e.ValidationError.Error() }

// Is makes errors.Is match ErrIdempotencyKeyReused, besides
// ErrInvalidParams through the ValidationError.
func (e *keyReused) Is(target error) bool { return target == ErrIdempotencyKeyReused }

// Unwrap is the ValidationError, so that errors.As finds it.
func (e *keyReused) Unwrap() error { return &e.ValidationError }
