package webhook_test

import "github.com/imagegen/imagegen/webhook"

// fairnessConfig sets the fairness test's attempt timeout.
func fairnessConfig(c webhook.Config) webhook.Config {
	c.AttemptTimeout = attemptTimeout
	return c
}
