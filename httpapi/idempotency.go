package httpapi

import "github.com/imagegen/imagegen"

// MaxIdempotencyKey is the longest Idempotency-Key of a submit, in bytes
// (imagegen.MaxIdempotencyKey). The service keeps the keys and replays
// their answers (imagegen.Service.SubmitIdempotent): the same key (per
// user) with the same body answers the first answer again and charges
// nothing more; with another body it is refused (422); while the first
// request is still running it is refused (409 idempotency_key_in_use).
// Only a submission (201) is kept: a refusal of the body (422) keeps no
// record, so the same body is refused again and the key may be sent
// with a corrected body; a refusal that depends on other state, such as
// 403 insufficient_credits before a top-up, or a server error, is
// forgotten too, so a retry runs afresh.
// Records are kept for the service's Config.IdempotencyTTL. Without the
// header nothing changes; an empty, over-long or repeated header is
// refused (422).
const MaxIdempotencyKey = imagegen.MaxIdempotencyKey
