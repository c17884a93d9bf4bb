package imagegen

import "math/rand/v2"

// MaxSeed is the largest seed a request may carry: seeds are unsigned
// 32-bit numbers, the range every seed-taking provider accepts.
const MaxSeed = 1<<32 - 1

// seedFor returns the seed a task records for req under plan: the
// request's own, or a fresh random one when it has none; nil when the
// model does not honour seeds (the task then reports no seed).
func seedFor(req Request, plan Plan) *int64 {
	if !plan.Seeded {
		return nil
	}
	if req.Seed != nil {
		s := *req.Seed
		return &s
	}
	s := rand.Int64N(MaxSeed + 1)
	return &s
}
