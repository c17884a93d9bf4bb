package postgres

import "time"

// SQLForTest is template with the store's schema filled in.
func (s *Store) SQLForTest(template string) string { return s.sql(template) }

// CompleteSQL is completeSQL, for the plan tests.
const CompleteSQL = completeSQL

// SetCreateTimeoutForTest sets the timeout of a batch of submits (the
// group commit's, groupcommit.DefaultTimeout otherwise). Call it before
// the store's first submit.
func (s *Store) SetCreateTimeoutForTest(d time.Duration) { s.creates.Timeout = d }

// QueuePositionsSQL is queuePositionsSQL, for the cost test.
const QueuePositionsSQL = queuePositionsSQL
