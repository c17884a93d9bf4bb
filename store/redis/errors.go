package redis

import (
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
)

func isNil(err error) bool { return errors.Is(err, goredis.Nil) }

// wrapErr names the operation; nil stays nil.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("redis store: %s: %w", op, err)
}
