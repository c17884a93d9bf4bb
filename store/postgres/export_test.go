package postgres

// SQLForTest is template with the store's schema filled in.
func (s *Store) SQLForTest(template string) string { return s.sql(template) }

// CompleteSQL is completeSQL, for the plan tests.
const CompleteSQL = completeSQL
