package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

func TestDecodeRequest(t *testing.T) {
	long := strings.Repeat("é", imagegen.MaxPromptChars) // 2000 code points, 4000 bytes
	urls := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = `"https://example.com/` + string(rune('a'+i)) + `.png"`
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	tests := []struct {
		name  string
		body  string
		field string // "" with ok=false means a body-level error
		ok    bool
		want  imagegen.Request
	}{
		{name: "minimal t2i", body: `{"scene":"text-to-image","prompt":"a cat"}`, ok: true,
			want: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a cat", AspectRatio: imagegen.AspectAuto}},
		{name: "t2i with ratio", body: `{"scene":"text-to-image","prompt":"a cat","aspect_ratio":"16:9"}`, ok: true,
			want: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a cat", AspectRatio: imagegen.Aspect16x9}},
		{name: "i2i", body: `{"scene":"image-to-image","prompt":"x","image_input":["http://example.com/a.png"]}`, ok: true,
			want: imagegen.Request{Scene: imagegen.SceneImageToImage, Prompt: "x", AspectRatio: imagegen.AspectAuto, ImageInput: []string{"http://example.com/a.png"}}},
		{name: "white space around", body: " \n{\"scene\":\"text-to-image\",\"prompt\":\"p\"}\n ", ok: true,
			want: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", AspectRatio: imagegen.AspectAuto}},
		{name: "2000 code points", body: `{"scene":"text-to-image","prompt":"` + long + `"}`, ok: true,
			want: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: long, AspectRatio: imagegen.AspectAuto}},
		{name: "8 urls", body: `{"scene":"image-to-image","prompt":"x","image_input":` + urls(8) + `}`, ok: true},

		{name: "empty body", body: ``},
		{name: "not json", body: `scene=text`},
		{name: "array", body: `[]`},
		{name: "string", body: `"x"`},
		{name: "null", body: `null`},
		{name: "truncated", body: `{"scene":"text-to-image"`},
		{name: "trailing data", body: `{"scene":"text-to-image","prompt":"p"}{}`},
		{name: "trailing garbage", body: `{"scene":"text-to-image","prompt":"p"} x`},
		{name: "invalid utf8", body: "{\"scene\":\"text-to-image\",\"prompt\":\"\xff\"}"},
		{name: "unknown field", body: `{"scene":"text-to-image","prompt":"p","cost":0}`, field: "cost"},
		{name: "owner not settable", body: `{"scene":"text-to-image","prompt":"p","owner":"x"}`, field: "owner"},
		{name: "status not settable", body: `{"scene":"text-to-image","prompt":"p","status":"success"}`, field: "status"},
		{name: "case variant", body: `{"Scene":"text-to-image","prompt":"p"}`, field: "Scene"},
		{name: "duplicate key", body: `{"scene":"text-to-image","prompt":"p","prompt":"q"}`, field: "prompt"},
		{name: "scene missing", body: `{"prompt":"p"}`, field: "scene"},
		{name: "scene bad", body: `{"scene":"video","prompt":"p"}`, field: "scene"},
		{name: "scene wrong type", body: `{"scene":1,"prompt":"p"}`, field: "scene"},
		{name: "scene null", body: `{"scene":null,"prompt":"p"}`, field: "scene"},
		{name: "prompt missing", body: `{"scene":"text-to-image"}`, field: "prompt"},
		{name: "prompt empty", body: `{"scene":"text-to-image","prompt":""}`, field: "prompt"},
		{name: "prompt only white space", body: `{"scene":"text-to-image","prompt":" \t\n\u00a0\u3000"}`, field: "prompt"},
		{name: "prompt only invisible characters", body: `{"scene":"text-to-image","prompt":"\u200b\u200d\ufeff\u00ad \u0007"}`, field: "prompt"},
		// The fillers and selectors that show nothing though they are not
		// format characters (Unicode's Default_Ignorable_Code_Point): a
		// Hangul filler is the usual way to pass off a blank name.
		{name: "prompt only fillers and selectors", body: `{"scene":"text-to-image","prompt":"\u3164\u115f\u1160\uffa0\u034f\ufe0f\u180b\u17b4"}`, field: "prompt"},
		// Format characters that show as a sign of their own (Unicode's
		// Prepended_Concatenation_Mark: the Arabic end of ayah, number sign)
		// are something to draw.
		{name: "prompt a visible format character", body: `{"scene":"text-to-image","prompt":"\u06dd"}`, ok: true,
			want: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "\u06dd", AspectRatio: imagegen.AspectAuto}},
		{name: "prompt wrong type", body: `{"scene":"text-to-image","prompt":["p"]}`, field: "prompt"},
		{name: "prompt 2001", body: `{"scene":"text-to-image","prompt":"` + long + `a"}`, field: "prompt"},
		{name: "ratio bad", body: `{"scene":"text-to-image","prompt":"p","aspect_ratio":"5:4"}`, field: "aspect_ratio"},
		{name: "ratio wrong type", body: `{"scene":"text-to-image","prompt":"p","aspect_ratio":1.5}`, field: "aspect_ratio"},
		{name: "t2i with images", body: `{"scene":"text-to-image","prompt":"p","image_input":["https://example.com/a.png"]}`, field: "image_input"},
		{name: "t2i with empty images", body: `{"scene":"text-to-image","prompt":"p","image_input":[]}`, field: "image_input"},
		{name: "t2i with null images", body: `{"scene":"text-to-image","prompt":"p","image_input":null}`, field: "image_input"},
		{name: "i2i without images", body: `{"scene":"image-to-image","prompt":"p"}`, field: "image_input"},
		{name: "i2i empty images", body: `{"scene":"image-to-image","prompt":"p","image_input":[]}`, field: "image_input"},
		{name: "i2i 9 images", body: `{"scene":"image-to-image","prompt":"p","image_input":` + urls(9) + `}`, field: "image_input"},
		{name: "i2i images wrong type", body: `{"scene":"image-to-image","prompt":"p","image_input":"https://example.com/a.png"}`, field: "image_input"},
		{name: "i2i images null item", body: `{"scene":"image-to-image","prompt":"p","image_input":[null]}`, field: "image_input"},
		{name: "i2i images number item", body: `{"scene":"image-to-image","prompt":"p","image_input":[1]}`, field: "image_input"},
		{name: "i2i relative url", body: `{"scene":"image-to-image","prompt":"p","image_input":["/a.png"]}`, field: "image_input"},
		{name: "i2i ftp url", body: `{"scene":"image-to-image","prompt":"p","image_input":["ftp://example.com/a.png"]}`, field: "image_input"},
		{name: "i2i file url", body: `{"scene":"image-to-image","prompt":"p","image_input":["file:///etc/passwd"]}`, field: "image_input"},
		{name: "callback", body: `{"scene":"text-to-image","prompt":"p","callback_url":"https://app.example.com/hook"}`, ok: true,
			want: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", AspectRatio: imagegen.AspectAuto}},
		{name: "callback not a url", body: `{"scene":"text-to-image","prompt":"p","callback_url":"hook"}`, field: "callback_url"},
		{name: "callback wrong type", body: `{"scene":"text-to-image","prompt":"p","callback_url":1}`, field: "callback_url"},
		{name: "seed", body: `{"scene":"text-to-image","prompt":"p","seed":4294967294}`, ok: true},
		{name: "seed zero", body: `{"scene":"text-to-image","prompt":"p","seed":0}`, ok: true},
		{name: "seed negative", body: `{"scene":"text-to-image","prompt":"p","seed":-1}`, field: "seed"},
		{name: "seed too big", body: `{"scene":"text-to-image","prompt":"p","seed":4294967295}`, field: "seed"},
		{name: "seed overflows int64", body: `{"scene":"text-to-image","prompt":"p","seed":99999999999999999999}`, field: "seed"},
		{name: "seed fraction", body: `{"scene":"text-to-image","prompt":"p","seed":1.5}`, field: "seed"},
		{name: "seed exponent", body: `{"scene":"text-to-image","prompt":"p","seed":1e3}`, field: "seed"},
		{name: "seed string", body: `{"scene":"text-to-image","prompt":"p","seed":"7"}`, field: "seed"},
		{name: "seed null", body: `{"scene":"text-to-image","prompt":"p","seed":null}`, field: "seed"},
		{name: "seed leading zero", body: `{"scene":"text-to-image","prompt":"p","seed":01}`, field: "seed"},
		{name: "events", body: `{"scene":"text-to-image","prompt":"p","callback_url":"https://a.example.com/h","callback_events":["processing","completed"]}`, ok: true},
		{name: "events without url", body: `{"scene":"text-to-image","prompt":"p","callback_events":["completed"]}`, field: "callback_events"},
		{name: "events empty", body: `{"scene":"text-to-image","prompt":"p","callback_url":"https://a.example.com/h","callback_events":[]}`, field: "callback_events"},
		{name: "events unknown", body: `{"scene":"text-to-image","prompt":"p","callback_url":"https://a.example.com/h","callback_events":["started"]}`, field: "callback_events"},
		{name: "events twice", body: `{"scene":"text-to-image","prompt":"p","callback_url":"https://a.example.com/h","callback_events":["completed","completed"]}`, field: "callback_events"},
		{name: "events wrong type", body: `{"scene":"text-to-image","prompt":"p","callback_url":"https://a.example.com/h","callback_events":"completed"}`, field: "callback_events"},
		{name: "i2i credentials", body: `{"scene":"image-to-image","prompt":"p","image_input":["https://u:p@example.com/a.png"]}`, field: "image_input"},
		// A port no connection can use: refused at submit, not charged
		// and then failed (a reference) or failing every delivery for an
		// hour (a callback).
		{name: "i2i port too big", body: `{"scene":"image-to-image","prompt":"p","image_input":["https://example.com:99999/a.png"]}`, field: "image_input"},
		{name: "i2i port zero", body: `{"scene":"image-to-image","prompt":"p","image_input":["https://example.com:0/a.png"]}`, field: "image_input"},
		{name: "i2i port 65535", body: `{"scene":"image-to-image","prompt":"p","image_input":["https://example.com:65535/a.png"]}`, ok: true},
		{name: "callback port too big", body: `{"scene":"text-to-image","prompt":"p","callback_url":"https://a.example.com:65536/h"}`, field: "callback_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := decodeValid([]byte(tt.body))
			if tt.ok {
				is.NoErr(err)
				if tt.want.Scene != "" {
					is.Equal(got.Scene, tt.want.Scene)
					is.Equal(got.Prompt, tt.want.Prompt)
					is.Equal(got.AspectRatio, tt.want.AspectRatio)
					is.Equal(got.ImageInput, tt.want.ImageInput)
				}
				return
			}
			var ve *imagegen.ValidationError
			is.True(errors.As(err, &ve)) // a *ValidationError
			is.True(errors.Is(err, imagegen.ErrInvalidParams))
			is.Equal(ve.Field, tt.field)
			if tt.field != "" {
				is.True(strings.HasPrefix(err.Error(), tt.field+": ")) // message names the field
			}
		})
	}
}

// decodeValid is what a submit body goes through: DecodeRequest, then
// the interface's rules (Service.Submit's Validate).
func decodeValid(body []byte) (imagegen.Request, error) {
	req, err := wire.DecodeRequest(body)
	if err == nil {
		err = req.Validate()
	}
	return req, err
}

// DecodeRequest reads the body's shape and types; the rules are
// Validate's, checked once, at submit.
func TestDecodeRequestDoesNotValidate(t *testing.T) {
	is := is.New(t)
	req, err := wire.DecodeRequest([]byte(`{"scene":"video","prompt":""}`))
	is.NoErr(err) // well-formed: decoded
	is.Equal(req.Scene, imagegen.Scene("video"))
	is.True(errors.Is(req.Validate(), imagegen.ErrInvalidParams)) // refused at submit
}

func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"scene":"text-to-image","prompt":"a cat"}`,
		`{"scene":"text-to-image","prompt":"\u00e9\ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t \ud800"}`,
		` {"prompt" : "p" , "scene":"text-to-image" } `, `{}`, `{"scene":"text-to-image","prompt":"p",}`,
		`{"scene":"image-to-image","prompt":"x","image_input":["http://example.com/a.png"],"aspect_ratio":"auto"}`,
		`{"scene":"text-to-image","prompt":"p","prompt":"q"}`,
		`{"scene":"text-to-image","prompt":"p","seed":42}`, `{"scene":"text-to-image","prompt":"p","seed":1.5e3}`,
		`{"scene":"text-to-image","prompt":"p","callback_url":"https://example.com/h","callback_events":["processing","completed"]}`,
		`{"scene":null}`, `[]`, `{`, "{\"prompt\":\"\xff\"}", `{"image_input":[null,1,{}]}`,
		`{"scene":"text-to-image","prompt":"p","aspect_ratio":"16:9"}`, `{"scene":"text-to-image\"","prompt":"p"}`,
		`{"scene":"text-to-\u0069mage","prompt":"p","aspect_ratio":"16:9\u0000"}`, `{"scene":"text-to-image`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeValid(body)
		if err != nil {
			var ve *imagegen.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, imagegen.ErrInvalidParams) {
				t.Fatalf("error %v is not a *ValidationError wrapping ErrInvalidParams", err)
			}
			// Well-formed JSON objects are refused for a named field,
			// never as malformed bodies.
			trimmed := bytes.TrimLeft(body, " \t\r\n")
			if ve.Field == "" && utf8.Valid(body) && json.Valid(body) && len(trimmed) > 0 && trimmed[0] == '{' {
				t.Fatalf("valid JSON object refused as malformed: %v", err)
			}
			return
		}
		// Whatever decodes must be a valid, normalised request...
		if err := req.Validate(); err != nil {
			t.Fatalf("decoded request does not validate: %v", err)
		}
		if req.AspectRatio == "" {
			t.Fatal("aspect ratio not normalised")
		}
		// ...and read the same by encoding/json.
		var std struct {
			Scene       imagegen.Scene           `json:"scene"`
			Prompt      string                   `json:"prompt"`
			AspectRatio imagegen.AspectRatio     `json:"aspect_ratio"`
			ImageInput  []string                 `json:"image_input"`
			CallbackURL string                   `json:"callback_url"`
			Seed        *int64                   `json:"seed"`
			Events      []imagegen.CallbackEvent `json:"callback_events"`
		}
		if err := json.Unmarshal(body, &std); err != nil {
			t.Fatalf("encoding/json refuses a body we accepted: %v", err)
		}
		if std.AspectRatio == "" {
			std.AspectRatio = imagegen.AspectAuto
		}
		if std.Scene != req.Scene || std.Prompt != req.Prompt || std.AspectRatio != req.AspectRatio || !slices.Equal(std.ImageInput, req.ImageInput) || std.CallbackURL != req.CallbackURL ||
			(std.Seed == nil) != (req.Seed == nil) || (std.Seed != nil && *std.Seed != *req.Seed) || !slices.Equal(std.Events, req.CallbackEvents) {
			t.Fatalf("encoding/json reads %+v, we read %+v", std, req)
		}
	})
}

func TestDecodeRequestSeedAndEvents(t *testing.T) {
	is := is.New(t)
	req, err := wire.DecodeRequest([]byte(`{"scene":"text-to-image","prompt":"p","seed":-0,"callback_url":"https://a.example.com/h","callback_events":["processing"]}`))
	is.NoErr(err)
	is.True(req.Seed != nil && *req.Seed == 0)
	is.Equal(req.CallbackEvents, []imagegen.CallbackEvent{imagegen.EventProcessing})
	req, err = wire.DecodeRequest([]byte(`{"scene":"text-to-image","prompt":"p","seed":123456}`))
	is.NoErr(err)
	is.Equal(*req.Seed, int64(123456))
	is.Equal(req.CallbackEvents, nil) // absent: completed only
	is.True(imagegen.Wants(nil, imagegen.EventCompleted))
	is.True(!imagegen.Wants(nil, imagegen.EventProcessing))
	is.True(imagegen.Wants([]imagegen.CallbackEvent{imagegen.EventProcessing}, imagegen.EventProcessing))
	is.True(!imagegen.Wants([]imagegen.CallbackEvent{imagegen.EventProcessing}, imagegen.EventCompleted))
}

// The field names and the scene and aspect ratio, enumerations, are the
// constants, not copies: a body's one allocation is its prompt.
func TestDecodeRequestSharesEnumerations(t *testing.T) {
	body := []byte(`{"scene":"text-to-image","prompt":"a lighthouse at dusk","aspect_ratio":"16:9"}`)
	if n := testing.AllocsPerRun(100, func() {
		req, err := wire.DecodeRequest(body)
		if err != nil || req.Scene != imagegen.SceneTextToImage || req.AspectRatio != imagegen.Aspect16x9 || req.Prompt != "a lighthouse at dusk" {
			t.Fatalf("decoded %+v, %v", req, err)
		}
	}); n != 1 {
		t.Fatalf("%v allocations a body", n)
	}
	// Spelled with an escape, the same value decodes the same.
	req, err := wire.DecodeRequest([]byte(`{"scene":"text-to-\u0069mage","prompt":"p","aspect_ratio":"16\u003a9"}`))
	if err != nil || req.Scene != imagegen.SceneTextToImage || req.AspectRatio != imagegen.Aspect16x9 {
		t.Fatalf("decoded %+v, %v", req, err)
	}
}
