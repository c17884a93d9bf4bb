package imagegen_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// Ids of one owner carry its mark, and are otherwise random UUIDs;
// other ids carry none.
func TestOwnedIDs(t *testing.T) {
	is := is.New(t)
	seen := map[string]bool{}
	for _, owner := range []string{"alice", "bob", "", "demo-1"} {
		for range 100 {
			id := imagegen.NewOwnedID(owner)
			is.True(!seen[id])
			seen[id] = true
			u, err := uuid.Parse(id)
			is.NoErr(err)
			is.Equal(u.Version(), uuid.Version(8))
			mark, ok := imagegen.IDOwnerMark(id)
			is.True(ok)
			is.Equal(mark, imagegen.OwnerMark(owner))
		}
	}
	is.True(imagegen.OwnerMark("alice") != imagegen.OwnerMark("bob"))
	for _, id := range []string{uuid.NewString(), "t1", "", "zzzzzzzz-zzzz-8zzz-zzzz-zzzzzzzzzzzz"} {
		_, ok := imagegen.IDOwnerMark(id)
		is.True(!ok)
	}
}

// Submit makes the task's id with its owner's mark.
func ExampleNewOwnedID() {
	id := imagegen.NewOwnedID("alice")
	mark, ok := imagegen.IDOwnerMark(id)
	fmt.Println(ok, mark == imagegen.OwnerMark("alice"))
	// Output: true true
}
