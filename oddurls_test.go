package imagegen_test

import (
	"context"
	"errors"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

// A callback_url or image_input URL that is not valid UTF-8 (the Go API
// and the console's form take any bytes; url.Parse keeps them) is a
// ValidationError naming the field, and nothing is charged: PostgreSQL's
// text refused such a callback_url with its encoding error (the submit
// failed as a server error), and the stores' JSON of the request turned
// the bytes into U+FFFD, another URL than was given.
func TestSubmitRefusesURLsThatAreNotUTF8(t *testing.T) {
	svc, err := imagegen.New(imagegen.Config{Store: testenv.Memory(t, memory.Config{}), Model: imagegentest.NewModel(1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := svc.Grant(ctx, "u", 10, "grant-1"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		req   imagegen.Request
	}{
		{"callback_url", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", CallbackURL: "https://hooks.example/\xff"}},
		{"callback_url", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", CallbackURL: "https://hooks.example/?a=\xc0\x80"}},
		{"image_input", imagegen.Request{Scene: imagegen.SceneImageToImage, Prompt: "p", ImageInput: []string{"https://img.example/a\xfe.png"}}},
	} {
		var ve *imagegen.ValidationError
		if err := tc.req.Validate(); !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("Validate(%+v) = %v, want a ValidationError on %s", tc.req, err, tc.field)
		}
		if _, err := svc.Submit(ctx, "u", tc.req); !errors.As(err, &ve) || ve.Field != tc.field || !errors.Is(err, imagegen.ErrInvalidParams) {
			t.Errorf("Submit(%+v) = %v, want a ValidationError on %s", tc.req, err, tc.field)
		}
	}
	if b, _ := svc.Balance(ctx, "u"); b != 10 {
		t.Errorf("balance %d after refused submits, want 10", b)
	}
	// Escaped, the same bytes are a valid URL.
	ok := imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", CallbackURL: "https://hooks.example/%FF"}
	if _, err := svc.Submit(ctx, "u", ok); err != nil {
		t.Errorf("Submit with an escaped callback_url: %v", err)
	}
}

// A host with a bracket that is not an IPv6 literal's ("https://]",
// "http://a]b/": url.Parse takes them) is refused at submit: the
// sender's and the fetcher's transport cannot split it from its port,
// so every delivery or fetch would fail. FuzzCallbackURL found it.
func TestSubmitRefusesHostsWithStrayBrackets(t *testing.T) {
	for _, raw := range []string{"https://]", "https://a]b/hook", "https://]:443/", "https://a[b/"} {
		var ve *imagegen.ValidationError
		req := imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", CallbackURL: raw}
		if err := req.Validate(); !errors.As(err, &ve) || ve.Field != "callback_url" {
			t.Errorf("callback_url %q: %v, want a ValidationError on callback_url", raw, err)
		}
		req = imagegen.Request{Scene: imagegen.SceneImageToImage, Prompt: "p", ImageInput: []string{raw}}
		if err := req.Validate(); !errors.As(err, &ve) || ve.Field != "image_input" {
			t.Errorf("image_input %q: %v, want a ValidationError on image_input", raw, err)
		}
	}
	for _, raw := range []string{"https://[2001:db8::1]/hook", "https://[2001:db8::1]:8443/hook", "https://[fe80::1%25eth0]/"} {
		req := imagegen.Request{Scene: imagegen.SceneImageToImage, Prompt: "p", ImageInput: []string{raw}}
		if err := req.Validate(); err != nil {
			t.Errorf("image_input %q: %v; an IPv6 literal's brackets are fine", raw, err)
		}
	}
}
