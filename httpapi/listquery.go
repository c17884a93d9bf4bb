package httpapi

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"

	"github.com/imagegen/imagegen"
)

// listQuery is the query of GET {prefix}/tasks.
type listQuery struct {
	status imagegen.Status
	limit  int // 0: the default
	cursor string
}

// parseListQuery reads the list query (the URL's raw query). A
// malformed query, an unknown or repeated parameter
// is refused rather than ignored, so that a misspelt "limt=5" or a
// second status does not silently give another page than was asked for;
// the values themselves are checked by Service.ListTasks. Errors are
// *imagegen.ValidationError naming the parameter.
func parseListQuery(rawQuery string) (listQuery, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return listQuery{}, &imagegen.ValidationError{Field: "query", Message: "is not a well-formed URL query"}
	}
	for _, name := range slices.Sorted(maps.Keys(q)) { // the same answer every time
		switch {
		case name != "status" && name != "limit" && name != "cursor":
			return listQuery{}, &imagegen.ValidationError{Field: name, Message: "is not a parameter of the task list (status, limit, cursor)"}
		case len(q[name]) > 1:
			return listQuery{}, &imagegen.ValidationError{Field: name, Message: "must be given at most once"}
		}
	}
	lq := listQuery{status: imagegen.Status(q.Get("status")), cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > imagegen.MaxListLimit {
			return listQuery{}, &imagegen.ValidationError{Field: "limit", Message: fmt.Sprintf("must be a whole number from 1 to %d", imagegen.MaxListLimit)}
		}
		lq.limit = n
	}
	return lq, nil
}
