package imagegen

import (
	"log/slog"
	"math/rand/v2"
)

// MaxSeed is the largest seed a request may carry: 0 to 4294967294 is
// the range every seed-taking provider accepts (Stability AI's is the
// narrowest).
const MaxSeed = 1<<32 - 2

// seedFor returns the seed a task records for req under plan: the
// request's own, or a fresh random one (1 to MaxSeed) when it has none;
// nil when the
// model does not honour seeds (the task then reports no seed).
func seedFor(req Request, plan Plan) *int64 {
	if !plan.Seeded {
		return nil
	}
	if req.Seed != nil {
		s := *req.Seed
		return &s
	}
	s := 1 + rand.Int64N(MaxSeed) // never 0, which some providers read as "random"
	return &s
}

// usedSeed is the seed to record on t at its success when the model
// reports (GeneratedImage.Seed of the first image) that it used another
// seed than the task's: the task then shows the seed that makes the
// image again. nil when the task records no seed (its model takes
// none), when the model reports none or the task's own, and when the
// reported one is outside 0 to MaxSeed (no request could carry it; it
// is logged).
func usedSeed(log *slog.Logger, t *Task, gen []GeneratedImage) *int64 {
	if t.Request.Seed == nil || len(gen) == 0 || gen[0].Seed == nil || *gen[0].Seed == *t.Request.Seed {
		return nil
	}
	used := *gen[0].Seed
	if used < 0 || used > MaxSeed {
		log.Warn("the model reports a seed outside 0 to MaxSeed; the task keeps its own", "seed", used, "task_seed", *t.Request.Seed)
		return nil
	}
	log.Info("the model used another seed than the task's; recording it", "seed", used, "task_seed", *t.Request.Seed)
	return &used
}
