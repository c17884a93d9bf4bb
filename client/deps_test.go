package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The client shares the wire's bodies and signatures with the server
// through package wire, and links none of the server's packages.
func TestClientLinksNoServerPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/imagegen/imagegen/client").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/imagegen/imagegen/"
	for _, pkg := range strings.Fields(string(out)) {
		rel, ours := strings.CutPrefix(pkg, module)
		if !ours {
			continue
		}
		for _, server := range []string{"httpapi", "webhook", "server", "console", "store", "metrics", "ratelimit", "cmd"} {
			if rel == server || strings.HasPrefix(rel, server+"/") {
				t.Errorf("the client links %s", pkg)
			}
		}
	}
}
