package httpapi

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/imagegen/imagegen"
)

// listQuery is the query of GET {prefix}/tasks.
type listQuery struct {
	status imagegen.Status
	limit  int // 0: the default
	cursor string
	view   View
}

// parseListQuery reads the list query (the URL's raw query). A
// malformed query, an unknown or repeated parameter
// is refused rather than ignored, so that a misspelt "limt=5" or a
// second status does not silently give another page than was asked for;
// the values themselves are checked by Service.ListTasks. Errors are
// *imagegen.ValidationError naming the parameter.
func parseListQuery(rawQuery string) (listQuery, error) {
	q, err := strictQuery(rawQuery, "task list", "status", "limit", "cursor", "view")
	if err != nil {
		return listQuery{}, err
	}
	view, err := parseView(q)
	if err != nil {
		return listQuery{}, err
	}
	limit, err := parseLimit(q)
	if err != nil {
		return listQuery{}, err
	}
	return listQuery{status: imagegen.Status(q.Get("status")), cursor: q.Get("cursor"), view: view, limit: limit}, nil
}

// strictQuery parses a query that may hold only the named parameters,
// each at most once.
func strictQuery(rawQuery, what string, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, &imagegen.ValidationError{Field: "query", Message: "is not a well-formed URL query"}
	}
	for _, name := range slices.Sorted(maps.Keys(q)) { // the same answer every time
		switch {
		case !slices.Contains(allowed, name):
			return nil, &imagegen.ValidationError{Field: name, Message: fmt.Sprintf("is not a parameter of the %s (%s)", what, strings.Join(allowed, ", "))}
		case len(q[name]) > 1:
			return nil, &imagegen.ValidationError{Field: name, Message: "must be given at most once"}
		}
	}
	return q, nil
}

// parseLimit reads the limit of a page: 0 (the default) when absent.
func parseLimit(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > imagegen.MaxListLimit {
		return 0, &imagegen.ValidationError{Field: "limit", Message: fmt.Sprintf("must be a whole number from 1 to %d", imagegen.MaxListLimit)}
	}
	return n, nil
}
