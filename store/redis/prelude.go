package redis

import (
	"regexp"
	"strings"
)

// preludeFor returns the prelude's definitions that body uses, directly
// or through one another, in the prelude's order. A script runs all the
// definitions it carries every time it runs: the whole prelude cost a
// script about 15,000 server instructions a run (callgrind), more than
// many of the scripts' own work.
func preludeFor(body string) string {
	defs := preludeParts
	used := make([]bool, len(defs))
	// Mark what body names, then what the marked ones name, until
	// nothing more is marked.
	for names := []map[string]bool{luaNames(body)}; len(names) > 0; {
		var next []map[string]bool
		for i, d := range defs {
			for _, n := range names {
				if !used[i] && n[d.name] {
					used[i] = true
					next = append(next, d.uses)
				}
			}
		}
		names = next
	}
	var b strings.Builder
	for i, d := range defs {
		if used[i] {
			b.WriteString(d.text)
		}
	}
	return b.String()
}

// luaNames is the set of the words (names, keywords) in Lua source
// outside its comments (the scripts have no "--" in their strings).
func luaNames(src string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		for _, w := range strings.FieldsFunc(line, func(r rune) bool {
			return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) {
			names[w] = true
		}
	}
	return names
}

// preludeDef is one top-level definition of the prelude ("local function
// NAME" or "local NAME"), with the comment lines before it.
type preludeDef struct {
	name string
	text string
	uses map[string]bool // the names in text
}

var (
	preludeDecl  = regexp.MustCompile(`^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)`)
	preludeParts = preludeDefs(prelude) // read-only
)

// preludeDefs splits src into its top-level definitions. A definition
// runs from its comment (or its first line) to the line before the next
// definition's comment.
func preludeDefs(src string) []preludeDef {
	var defs []preludeDef
	var cur, comment strings.Builder
	name := ""
	flush := func() {
		if name != "" {
			defs = append(defs, preludeDef{name: name, text: cur.String(), uses: luaNames(cur.String())})
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(src, "\n") {
		switch m := preludeDecl.FindStringSubmatch(line); {
		case strings.HasPrefix(line, "--"):
			comment.WriteString(line)
		case m != nil:
			flush()
			name = m[1]
			cur.WriteString(comment.String())
			comment.Reset()
			cur.WriteString(line)
		default:
			cur.WriteString(comment.String())
			comment.Reset()
			cur.WriteString(line)
		}
	}
	cur.WriteString(comment.String())
	flush()
	return defs
}
