package bfl

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// input is the body of POST /v1/{model}: the prompt, the task's seed,
// output_format png (so that the answer can be cropped), and the size
// as the model takes it: width and height for flux-pro-1.1 and
// flux-dev, aspect_ratio for the others. Kontext takes the reference as
// input_image (base64); with auto it sends no aspect_ratio, so that the
// answer follows the reference.
type input struct {
	Prompt       string `json:"prompt"`
	Seed         *int64 `json:"seed,omitempty"`
	Width        int    `json:"width,omitempty"`
	Height       int    `json:"height,omitempty"`
	AspectRatio  string `json:"aspect_ratio,omitempty"`
	InputImage   string `json:"input_image,omitempty"`
	OutputFormat string `json:"output_format"`
}

// sizes are what flux-pro-1.1 and flux-dev are asked for, by ratio:
// about a megapixel, sides multiples of 32 from 256 to 1440. 16:9 and
// 9:16 have no such size of the exact ratio near a megapixel; theirs is
// cropped (1344x768 to 1344x756).
func sizeFor(r imagegen.AspectRatio) provider.Size {
	switch r {
	case imagegen.Aspect16x9:
		return provider.Size{W: 1344, H: 768}
	case imagegen.Aspect9x16:
		return provider.Size{W: 768, H: 1344}
	case imagegen.Aspect4x3:
		return provider.Size{W: 1152, H: 864}
	case imagegen.Aspect3x4:
		return provider.Size{W: 864, H: 1152}
	case imagegen.Aspect3x2:
		return provider.Size{W: 1248, H: 832}
	case imagegen.Aspect2x3:
		return provider.Size{W: 832, H: 1248}
	}
	return provider.Size{W: 1024, H: 1024}
}

func (m *Model) input(req imagegen.Request, refs []provider.Reference) input {
	in := input{Prompt: req.Prompt, Seed: req.Seed, OutputFormat: "png"}
	ratio := provider.TargetRatio(req, refs, nil)
	switch {
	case m.spec.sized:
		s := sizeFor(ratio)
		in.Width, in.Height = s.W, s.H
	case len(refs) > 0 && (req.AspectRatio == "" || req.AspectRatio == imagegen.AspectAuto):
		// no aspect_ratio: Kontext follows the reference
	default:
		in.AspectRatio = string(ratio)
	}
	if len(refs) > 0 {
		in.InputImage = base64.StdEncoding.EncodeToString(refs[0].Data)
	}
	return in
}

// asyncResponse is the answer to a submit (AsyncResponse).
type asyncResponse struct {
	ID         string `json:"id"`
	PollingURL string `json:"polling_url"`
}

// submit starts a task.
func (m *Model) submit(ctx context.Context, in input) (*asyncResponse, error) {
	post, err := provider.PostJSON(m.client.URL("/v1/"+m.cfg.Model), in, m.header())
	if err != nil {
		return nil, &imagegen.ModelError{Provider: Provider, Misconfigured: true, Message: provider.MsgMisconfigured, Err: err}
	}
	resp, err := m.client.Do(ctx, post)
	if err != nil {
		return nil, err
	}
	var a asyncResponse
	if err := provider.DecodeJSON(Provider, resp, &a); err != nil {
		return nil, err
	}
	if a.ID == "" {
		return nil, provider.BadAnswer(Provider, true, errors.New("the submit answered no task id"))
	}
	if len(a.ID) > 200 {
		return nil, provider.BadAnswer(Provider, true, fmt.Errorf("the submit answered a task id of %d bytes", len(a.ID)))
	}
	return &a, nil
}
