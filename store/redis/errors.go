package redis

import (
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
)

func isNil(err error) bool { return errors.Is(err, goredis.Nil) }

// storeName starts the store's errors.
const storeName = "redis store"

// wrapErr names the operation; nil stays nil.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", storeName, op, err)
}

// errQueueKeys: a task could not be given back to the queue (a retry, a
// release, a lease recovery, an operator's requeue) because one of the
// queues it goes into (pending, fair:models, or its model's fair queue)
// holds a value of the wrong kind, which only something other than the
// store writes. Nothing was changed: the task is as it was (a recovery
// pushes its lease end a minute later), to be given back once the key is
// mended.
var errQueueKeys = errors.New("the store's queues in Redis could not take the task back (a value of the wrong kind in pending, fair:models or the model's fair queue); the task was left as it was")

// errAttemptMoved: an operator's recharging requeue read the task at one
// attempt, and by the time its script ran the task had been requeued,
// claimed and failed again (at a later attempt), so the recharge's
// references (RechargeRef, RerefundRef), named after the attempt read,
// were another attempt's. Nothing was changed; RequeueTask reads the
// task again once before it answers with this.
var errAttemptMoved = fmt.Errorf("the task failed again at a later attempt while it was being requeued; nothing was changed: %w", imagegen.ErrInvalidTransition)
