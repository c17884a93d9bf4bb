package imagegen

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// generateRecovering calls the model, a panic in Generate's goroutine
// becoming the attempt's error. An adapter with a bug (an answer it did
// not expect) would otherwise end the worker's process, and with it
// imagegen serve's HTTP API and every other generation under way, and
// leave the task processing until its lease ran out, to crash the next
// worker. The error is not a *ModelError: the attempt is retried, and
// the task failed (CodeInternal) and refunded on its last, as for any
// other error that is not the model's. The panic and its stack are
// logged. A nil *ModelError returned as the error (a typed nil) is no
// error: every reading of it (Error, Unwrap, errors.Is) would panic
// outside the model's call.
func (s *Service) generateRecovering(ctx context.Context, log *slog.Logger, g Generation) (imgs []GeneratedImage, err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("the model panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			imgs, err = nil, fmt.Errorf("imagegen: model %s panicked: %v", g.Model, v)
		}
	}()
	imgs, err = s.cfg.Model.Generate(ctx, g)
	if me, ok := err.(*ModelError); ok && me == nil {
		err = nil // a typed nil: no failure (its Error and Unwrap would panic)
	}
	return imgs, err
}
