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
	defs := preludeDefs(prelude)
	used := make([]bool, len(defs))
	// Mark what body names, then what the marked ones name, until
	// nothing more is marked.
	for texts, changed := []string{luaComment.ReplaceAllString(body, "")}, true; changed; {
		changed = false
		var next []string
		for i, d := range defs {
			if used[i] {
				continue
			}
			for _, t := range texts {
				if d.name.MatchString(t) {
					used[i], changed = true, true
					next = append(next, luaComment.ReplaceAllString(d.text, ""))
					break
				}
			}
		}
		texts = next
	}
	var b strings.Builder
	for i, d := range defs {
		if used[i] {
			b.WriteString(d.text)
		}
	}
	return b.String()
}

// preludeDef is one top-level definition of the prelude ("local function
// NAME" or "local NAME"), with the comment lines before it.
type preludeDef struct {
	name *regexp.Regexp // NAME as a whole word
	text string
}

var (
	preludeDecl = regexp.MustCompile(`^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)`)
	luaComment  = regexp.MustCompile(`--[^\n]*`) // the scripts have no "--" in their strings
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
			defs = append(defs, preludeDef{name: regexp.MustCompile(`\b` + name + `\b`), text: cur.String()})
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
