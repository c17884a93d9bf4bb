package client_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/wire"
)

// The client's Task reads every field of the API's task body
// (wire.TaskBody, with the full view's wire.TaskDetails), so that one
// the server sends is never dropped on the way to the caller.
func TestTaskReadsEveryWireField(t *testing.T) {
	got := jsonNames(reflect.TypeFor[client.Task]())
	for _, typ := range []reflect.Type{reflect.TypeFor[wire.TaskBody](), reflect.TypeFor[wire.TaskDetails]()} {
		for name := range jsonNames(typ) {
			if !got[name] {
				t.Errorf("client.Task has no field for %q of %s", name, typ)
			}
		}
	}
}

// jsonNames are the JSON names of a struct's own fields (embedded
// structs left out).
func jsonNames(typ reflect.Type) map[string]bool {
	names := map[string]bool{}
	for f := range typ.Fields() {
		if f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names[name] = true
	}
	return names
}
