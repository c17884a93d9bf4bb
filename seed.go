package imagegen

import "math/rand/v2"

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
