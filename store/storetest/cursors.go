package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/imagegen/imagegen"
)

// CheckCursor gives cursor, as a client could send it back, to a store's
// three cursor-paged lists (ListTasks and ListLedger of owner,
// ListAllTasks) and to svc's (a Service on that store), for the stores'
// cursor fuzz targets: a store refuses a cursor only with an error that
// wraps imagegen.ErrInvalidParams (a 4xx through the Service, never a
// 5xx), the Service answers any cursor with a page or a ValidationError
// on "cursor", and a page of owner's tasks holds owner's, newest first.
func CheckCursor(t *testing.T, store imagegen.Store, svc *imagegen.Service, owner, cursor string) {
	t.Helper()
	ctx := context.Background()
	refused := func(what string, err error) {
		t.Helper()
		if err != nil && !errors.Is(err, imagegen.ErrInvalidParams) {
			t.Fatalf("%s(cursor %q): %v, not ErrInvalidParams", what, cursor, err)
		}
	}
	page, err := store.ListTasks(ctx, owner, "", 2, cursor)
	refused("ListTasks", err)
	for i, task := range page.Tasks {
		if task.Owner != owner || (i > 0 && task.CreatedAt.After(page.Tasks[i-1].CreatedAt)) {
			t.Fatalf("ListTasks(cursor %q): task %d of %s, created %v, in a page of %s's newest first", cursor, i, task.Owner, task.CreatedAt, owner)
		}
	}
	_, err = store.ListAllTasks(ctx, imagegen.TaskFilter{}, 2, cursor)
	refused("ListAllTasks", err)
	_, err = store.ListLedger(ctx, owner, 2, cursor)
	refused("ListLedger", err)

	var ve *imagegen.ValidationError
	if _, err := svc.ListTasks(ctx, owner, "", 2, cursor); err != nil && (!errors.As(err, &ve) || ve.Field != "cursor") {
		t.Fatalf("Service.ListTasks(cursor %q): %v, not a ValidationError on cursor", cursor, err)
	}
	if _, err := svc.ListLedger(ctx, owner, 2, cursor); err != nil && (!errors.As(err, &ve) || ve.Field != "cursor") {
		t.Fatalf("Service.ListLedger(cursor %q): %v, not a ValidationError on cursor", cursor, err)
	}
}
