package redis

import (
	"regexp"
	"strings"
	"testing"
)

// TestScriptsHandRedisNoNumberLiterals checks that the allow scripts give
// redis.call no number written as a literal: Redis writes each number
// handed to redis.call with snprintf("%.17g"), about 2,200 server
// instructions each under callgrind, where a string literal costs
// nothing (ZRANGE key -1 -1 on a sorted set was 4 % of a check).
func TestScriptsHandRedisNoNumberLiterals(t *testing.T) {
	for name, src := range map[string]string{"allow_args": allowArgs, "allow_log": allowLog, "allow_set": allowSet, "allow_run": allowRun} {
		for _, call := range redisCalls(src) {
			for _, arg := range call.args {
				if numberLiteral.MatchString(arg) {
					t.Errorf("%s.lua: %s hands Redis the number %s: write it as a string", name, call.text, strings.TrimSpace(arg))
				}
			}
		}
	}
}

var (
	numberLiteral = regexp.MustCompile(`^\s*-?[0-9][0-9.]*\s*$`)
	redisCallOpen = regexp.MustCompile(`redis\.p?call\(`)
)

// luaCall is one redis.call or redis.pcall in a script: its text and its
// arguments, split at the commas outside parentheses and strings.
type luaCall struct {
	text string
	args []string
}

// redisCalls finds the redis.call and redis.pcall calls of src (outside
// its comments).
func redisCalls(src string) []luaCall {
	var code strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		code.WriteString(line + "\n")
	}
	s := code.String()
	var out []luaCall
	for _, loc := range redisCallOpen.FindAllStringIndex(s, -1) {
		depth, quote, start := 1, byte(0), loc[1]
		var args []string
		i := loc[1]
		for ; i < len(s) && depth > 0; i++ {
			switch c := s[i]; {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '\'' || c == '"':
				quote = c
			case c == '(' || c == '{' || c == '[':
				depth++
			case c == ')' || c == '}' || c == ']':
				depth--
				if depth == 0 {
					args = append(args, s[start:i])
				}
			case c == ',' && depth == 1:
				args = append(args, s[start:i])
				start = i + 1
			}
		}
		out = append(out, luaCall{text: s[loc[0]:i], args: args})
	}
	return out
}
