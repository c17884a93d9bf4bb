package redis

import (
	"fmt"
	"strconv"
)

// replyInt is a whole number of a script's reply: an integer, or the
// string of one (a Lua number above 2^53 cannot hold every integer, so
// scripts send such numbers as strings).
func replyInt(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	}
	return 0, fmt.Errorf("not a whole number: %T", v)
}

// replyIntOrZero is replyInt, 0 for what is not a whole number.
func replyIntOrZero(v any) int64 {
	n, _ := replyInt(v)
	return n
}
