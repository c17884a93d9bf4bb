package redistest

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// Hook is a go-redis hook for tests that look at the commands a client
// sends, alone or in pipelines: Before, when set, sees each command
// before it goes and may answer it with an error instead (the command
// is then not sent; a pipeline goes on without those it answered);
// After, when set, sees each command once it has its reply. Add it with
// the client's AddHook.
type Hook struct {
	Before func(goredis.Cmder) error
	After  func(goredis.Cmder)
}

func (h Hook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h Hook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if err := h.before(cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		err := next(ctx, cmd)
		h.after(cmd)
		return err
	}
}

func (h Hook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		send := cmds[:0:0]
		var answered error
		for _, cmd := range cmds {
			if err := h.before(cmd); err != nil {
				cmd.SetErr(err)
				answered = err
				continue
			}
			send = append(send, cmd)
		}
		err := answered
		if len(send) > 0 {
			if e := next(ctx, send); e != nil {
				err = e
			}
		}
		for _, cmd := range send {
			h.after(cmd)
		}
		return err
	}
}

func (h Hook) before(cmd goredis.Cmder) error {
	if h.Before == nil {
		return nil
	}
	return h.Before(cmd)
}

func (h Hook) after(cmd goredis.Cmder) {
	if h.After != nil {
		h.After(cmd)
	}
}
