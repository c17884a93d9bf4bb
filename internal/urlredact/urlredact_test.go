package urlredact_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/imagegen/imagegen/internal/urlredact"
)

// Whatever the URL looks like, an error text that repeats its password
// (whole, in parts around an '@', encoded or decoded, or a fragment a
// parser quoted) comes out without any of it; the rest stays readable.
func TestTextHidesEveryPartOfThePassword(t *testing.T) {
	cases := []struct {
		raw  string
		msg  string   // what a parser or a client said
		leak []string // none of which may remain
	}{
		{"redis://:s3cret@t4il@127.0.0.1:6379/0", "auth s3cret@t4il refused", []string{"s3cret", "t4il"}},
		{"redis://:s3cret@t4il@127.0.0.1:6379/0", "auth s3cret%40t4il refused", []string{"s3cret", "t4il"}},
		{"redis://:s3cret%40t4il@127.0.0.1:6379/0", "auth s3cret@t4il refused", []string{"s3cret", "t4il"}},
		{"redis://:s3cret@t4il@127.0.0.1:bad/0", `cannot parse redis://:xxxxx@t4il@127.0.0.1:bad/0`, []string{"t4il"}}, // a parser that cut at the first '@'
		{"redis://:s3cret/t4il@127.0.0.1:6379/0", `invalid port ":s3cret" after host`, []string{"s3cret"}},
		{"redis://:s3cret%zzt4il@127.0.0.1:6379/0", `invalid URL escape "%zz"`, []string{"%zz"}},
		{`redis://:s3"cret@127.0.0.1:bad/0`, `invalid character "s3\"cret" in host`, []string{"s3", "cret"}},
		{"postgres://alice:s3cret@t4il@127.0.0.1:1/db", "password s3cret@t4il and s3cret alone", []string{"s3cret", "t4il"}},
		{"redis://127.0.0.1:6379/0?password=s3cr%26et&sentinel_password=t4il", "auth s3cr&et, then t4il", []string{"s3cr", "t4il"}},
		{"host=127.0.0.1 user=alice password='s3c ret\\'t4il' port=bad", "password s3c ret't4il", []string{"s3c", "t4il"}},
		{"host=127.0.0.1 user=alice password=s3cret@t4il port=bad", "password s3cret@t4il", []string{"s3cret", "t4il"}},
		{"redis:// :s3cret@t4il@host", "nothing to see: s3cret@t4il", []string{"s3cret", "t4il"}},
	}
	for _, c := range cases {
		got := urlredact.Text(c.msg, c.raw, urlredact.Password)
		for _, l := range c.leak {
			if strings.Contains(got, l) {
				t.Errorf("%s: %q hid it as %q, which still holds %q", c.raw, c.msg, got, l)
			}
		}
	}
}

// The user name is hidden with Userinfo only; what is not a secret stays.
func TestTextKeepsTheRest(t *testing.T) {
	raw := "postgres://alice:s3cret@127.0.0.1:1/db?connect_timeout=nope"
	msg := `user alice: connect_timeout: parsing "nope": invalid syntax (s3cret)`
	if got, want := urlredact.Text(msg, raw, urlredact.Password), `user alice: connect_timeout: parsing "nope": invalid syntax (xxxxx)`; got != want {
		t.Errorf("Password: got %q, want %q", got, want)
	}
	if got := urlredact.Text("user ad@min:s3cret", "redis://ad@min:s3cret@host:6379", urlredact.Userinfo); strings.Contains(got, "ad@min") || strings.Contains(got, "s3cret") {
		t.Errorf("Userinfo: got %q", got)
	}
	if got := urlredact.Text(`invalid port ":notaport" after host`, "redis://127.0.0.1:notaport", urlredact.Userinfo); got != `invalid port ":notaport" after host` {
		t.Errorf("no userinfo: got %q, want it unchanged", got)
	}
}

// Error keeps an error that had nothing to hide, so that errors.Is
// still sees through it.
func TestErrorKeepsAnErrorWithNothingToHide(t *testing.T) {
	base := errors.New("refused")
	err := fmt.Errorf("dial: %w", base)
	if got := urlredact.Error(err, "redis://:s3cret@host", urlredact.Userinfo); !errors.Is(got, base) {
		t.Errorf("got %v, want err itself", got)
	}
	if got := urlredact.Error(fmt.Errorf("auth %s: %w", url.QueryEscape("s3cret"), base), "redis://:s3cret@host", urlredact.Userinfo); strings.Contains(got.Error(), "s3cret") {
		t.Errorf("got %v", got)
	}
	if urlredact.Error(nil, "redis://:s3cret@host", urlredact.Userinfo) != nil {
		t.Error("nil: not nil")
	}
}
