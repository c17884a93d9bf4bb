package redis

import (
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
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
