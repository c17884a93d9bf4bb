package imagegen_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMESnippetsAreCompiledCode keeps every Go snippet of the README
// honest: each ```go block must be preceded by a line
// "<!-- snippet: path -->" naming a Go file of the repository that CI
// compiles and runs (an Example or a test), and its lines must appear
// there, in order and contiguous (white space aside). A snippet edited
// in the README alone, or code changed without the README, fails here.
func TestREADMESnippetsAreCompiledCode(t *testing.T) {
	f, err := os.Open("README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	marker := regexp.MustCompile(`<!-- snippet: (\S+) -->`)
	var (
		source  string // the file named by the last marker
		inGo    bool
		snippet []string
		line    int
		count   int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch {
		case marker.MatchString(text):
			source = marker.FindStringSubmatch(text)[1]
		case text == "```go":
			if source == "" {
				t.Errorf("README.md:%d: a Go snippet without a <!-- snippet: path --> line before it", line)
			}
			inGo, snippet = true, nil
		case inGo && text == "```":
			inGo = false
			count++
			checkSnippet(t, line, source, snippet)
			source = ""
		case inGo:
			snippet = append(snippet, text)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if count == 0 {
		t.Fatal("no Go snippet found in README.md")
	}
}

var spaces = regexp.MustCompile(`\s+`)

func normalize(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = spaces.ReplaceAllString(strings.TrimSpace(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func checkSnippet(t *testing.T, line int, source string, snippet []string) {
	t.Helper()
	if source == "" {
		return
	}
	if !strings.HasSuffix(source, ".go") {
		t.Errorf("README.md:%d: snippet source %s is not a Go file", line, source)
		return
	}
	code, err := os.ReadFile(filepath.FromSlash(source))
	if err != nil {
		t.Errorf("README.md:%d: %v", line, err)
		return
	}
	want, have := normalize(snippet), normalize(strings.Split(string(code), "\n"))
	for i := 0; i+len(want) <= len(have); i++ {
		if equal(have[i:i+len(want)], want) {
			return
		}
	}
	t.Errorf("README.md:%d: the snippet is not in %s (first line %q)", line, source, want[0])
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestREADMEEmbedOpensWithQuickstart: the first Go block under the
// README's "Embed it in your app" heading is examples/quickstart/main.go,
// whole and verbatim (tabs included), so what a newcomer pastes is the
// program whose test builds it in a fresh module and runs it.
func TestREADMEEmbedOpensWithQuickstart(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	program, err := os.ReadFile(filepath.FromSlash("examples/quickstart/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Embed it in your app\n")
	if !ok {
		t.Fatal(`README.md has no "## Embed it in your app" heading`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "\n```go\n")
	if !ok {
		t.Fatal("the Embed section has no Go block")
	}
	block, _, ok = strings.Cut(block, "\n```\n")
	if !ok {
		t.Fatal("the Embed section's first Go block is not closed")
	}
	if block+"\n" != string(program) {
		t.Errorf("the Embed section's first Go block differs from examples/quickstart/main.go; paste the file whole")
	}
}

// TestREADMEWalkWritesOutsideTheRepository: the README's shell sessions
// are run from the clone (go run ./cmd/imagegen ...), so every file they
// write (curl -o, generate -o, a redirect, mkdir) must name an absolute
// path, and every generate must name its file (without -o it writes
// <task id>.png into the working directory): following the README leaves
// the repository as it was.
func TestREADMEWalkWritesOutsideTheRepository(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	writes := regexp.MustCompile(`(?:\s-o\s+|[^2&]>>?\s*|\bmkdir\s+(?:-p\s+)?|\btee\s+)("[^"]*"|'[^']*'|\S+)`)
	inShell, checked := false, 0
	for i, line := range strings.Split(string(readme), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "```sh" || trimmed == "```console" || trimmed == "```bash":
			inShell = true
			continue
		case strings.HasPrefix(trimmed, "```"):
			inShell = false
			continue
		case !inShell || strings.HasPrefix(trimmed, "#"):
			continue
		}
		command, _, _ := strings.Cut(trimmed, " # ") // a comment after the command
		if strings.Contains(command, "imagegen generate") && !regexp.MustCompile(`\s-o\s`).MatchString(command) {
			t.Errorf("README.md:%d: generate without -o writes into the working directory: %s", i+1, trimmed)
		}
		for _, m := range writes.FindAllStringSubmatch(command, -1) {
			path := strings.Trim(m[1], `"'`)
			checked++
			if !strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "$TMPDIR") && !strings.HasPrefix(path, "~") {
				t.Errorf("README.md:%d: writes %q, inside the clone; write to /tmp instead: %s", i+1, path, trimmed)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no file written by the README's sessions was found: the check reads nothing")
	}
}
