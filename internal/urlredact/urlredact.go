// Package urlredact hides the secrets of a connection string (a URL such
// as redis:// or postgres://, or a key=value DSN) in the text of an error
// about it, whatever the string looks like: parsable or not, with '@',
// ':', '/' or '%' in its password, written encoded or not.
//
// A URL's userinfo ends at an '@', but which one depends on the parser
// (Go's net/url takes the last before the host, pgx the first), and a
// password with an unencoded '/', '?' or '#' ends the authority early.
// So every reading is hidden: for each '@' after "://", the text before
// it (Userinfo), or the part of that text after its first ':' (the
// password, as both parsers split it), what follows each '@' inside that
// text (what is left when a parser cut, or masked, up to that '@'), and
// each tail of that text followed by the '@' (what a parser shows as a
// path, a query option's name or a quoted fragment when the authority
// ended early), each also as written, decoded and re-encoded; the values
// of password query options (password, sentinel_password, sslpassword);
// and the password of a key=value DSN, quoted or not. A parser's error
// may quote a fragment of its input instead ("invalid port \":pa\"
// after host", "invalid URL escape \"%zz\""), with Go's quoting or as
// written: a quoted fragment of the URL that starts before its last '@'
// is hidden too. Every match is found in the message as it came, and
// overlapping ones are masked as one.
package urlredact

import (
	"cmp"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Mask replaces what is hidden.
const Mask = "xxxxx"

// Part says what of a URL's userinfo is secret.
type Part int

const (
	// Password hides the password, not the user name (PostgreSQL, whose
	// user name the process prints).
	Password Part = iota
	// Userinfo hides the user name and password alike (Redis: a user name
	// alone may be a password written without its ':').
	Userinfo
)

// Error returns err, or an error whose text is err's with the secrets of
// raw hidden (Text) when it had any to hide.
func Error(err error, raw string, p Part) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if hidden := Text(msg, raw, p); hidden != msg {
		return errors.New(hidden)
	}
	return err
}

// Text returns msg with every secret of raw hidden. What is hidden is
// found in msg as it came (every secret, every quoted fragment of the
// text before the last '@'), and each run of it is masked once: hiding
// one first would leave the rest of another that overlaps it readable.
func Text(msg, raw string, p Part) string {
	var hide [][2]int
	for _, s := range Secrets(raw, p) {
		for i := 0; ; {
			j := strings.Index(msg[i:], s)
			if j < 0 {
				break
			}
			hide = append(hide, [2]int{i + j, i + j + len(s)})
			i += j + 1
		}
	}
	if _, rest, ok := strings.Cut(raw, "://"); ok {
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			// A fragment of the URL that starts before its last '@'
			// holds a part of the userinfo (and maybe of what follows).
			inUserinfo := func(f string) bool {
				i := strings.Index(rest, f)
				return f != "" && i >= 0 && i < at
			}
			for _, m := range slices.Concat(quoted.FindAllStringIndex(msg, -1), quotedPlain.FindAllStringIndex(msg, -1)) {
				q := msg[m[0]:m[1]]
				inner := q[1 : len(q)-1]
				unq, err := strconv.Unquote(q)
				if err != nil {
					unq = inner
				}
				if inUserinfo(unq) || inUserinfo(inner) {
					hide = append(hide, [2]int{m[0] + 1, m[1] - 1})
				}
			}
		}
	}
	if len(hide) == 0 {
		return msg
	}
	slices.SortFunc(hide, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	var b strings.Builder
	last := 0 // msg[:last] is written
	for _, h := range hide {
		switch {
		case h[0] > last:
			b.WriteString(msg[last:h[0]])
			b.WriteString(Mask)
		case h[1] <= last:
			continue
		case last == 0 && h[0] == 0:
			b.WriteString(Mask)
		}
		last = max(last, h[1])
	}
	b.WriteString(msg[last:])
	return b.String()
}

// quoted is a Go-quoted string, as %q writes it; quotedPlain, text
// between double quotes as written (pgx quotes a fragment with "%s",
// which may end with a backslash).
var (
	quoted      = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	quotedPlain = regexp.MustCompile(`"[^"]*"`)
)

// Secrets returns every string of raw that may be a secret, longest
// first (so that a secret is hidden whole before a part of it is).
func Secrets(raw string, p Part) []string {
	var out []string
	add := func(s string) {
		out = append(out, s)
		if dec, err := url.PathUnescape(s); err == nil {
			out = append(out, dec)
		}
		if dec, err := url.QueryUnescape(s); err == nil { // a query's key or value, as a parser reads it
			out = append(out, dec)
		}
		out = append(out, url.PathEscape(s), url.QueryEscape(s))
	}
	if _, rest, ok := strings.Cut(raw, "://"); ok {
		for i := range len(rest) {
			if rest[i] != '@' {
				continue
			}
			info := rest[:i]
			if p == Userinfo {
				add(info)
			}
			if _, pw, ok := strings.Cut(info, ":"); ok {
				add(pw)
			}
			for j := range len(info) {
				if info[j] == '@' { // what a parser that cut there left
					add(info[j+1:])
				}
				if j > 0 {
					// Where a parser ended the authority early (an
					// unencoded '/', '?' or '#') or a quoted fragment
					// began (after a '"' or a bad escape), it shows the
					// rest with this '@' and what follows.
					add(info[j:] + "@")
				}
			}
		}
	}
	if _, query, ok := strings.Cut(raw, "?"); ok {
		for _, kv := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' }) {
			k, v, _ := strings.Cut(kv, "=")
			if key, err := url.QueryUnescape(k); err == nil && passwordKey(key) {
				add(v)
				if dec, err := url.QueryUnescape(v); err == nil {
					add(dec)
				}
			}
		}
	}
	for _, v := range dsnPasswords(raw) {
		add(v)
	}
	out = slices.DeleteFunc(out, func(s string) bool { return s == "" })
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return slices.Compact(out)
}

func passwordKey(k string) bool {
	switch strings.ToLower(k) {
	case "password", "sentinel_password", "sslpassword":
		return true
	}
	return false
}

// dsnKey is a password key of a key=value DSN, before its value.
var dsnKey = regexp.MustCompile(`(?i)(?:^|\s)(?:ssl)?password\s*=\s*`)

// dsnPasswords returns the password values of a key=value DSN: a value
// in single quotes (with \' and \\ escapes) as written and as meant, or
// one up to the next space.
func dsnPasswords(raw string) []string {
	var out []string
	for _, m := range dsnKey.FindAllStringIndex(raw, -1) {
		v := raw[m[1]:]
		if !strings.HasPrefix(v, "'") {
			if i := strings.IndexAny(v, " \t\n\r"); i >= 0 {
				v = v[:i]
			}
			out = append(out, v)
			continue
		}
		var meant strings.Builder
		end := len(v)
		for i := 1; i < len(v); i++ {
			if v[i] == '\\' && i+1 < len(v) {
				i++
				meant.WriteByte(v[i])
				continue
			}
			if v[i] == '\'' {
				end = i + 1
				break
			}
			meant.WriteByte(v[i])
		}
		out = append(out, v[:end], strings.Trim(v[:end], "'"), meant.String())
	}
	return out
}
