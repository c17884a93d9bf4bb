package fal

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// input is the model input of fal-ai/flux/dev (and the endpoints that
// share its schema), POSTed as the body of the queue submit. Left out
// fields take the model's defaults (num_inference_steps 28,
// guidance_scale 3.5 on flux/dev), so that other flux endpoints get
// theirs.
type input struct {
	Prompt              string    `json:"prompt"`
	ImageSize           imageSize `json:"image_size"`
	NumImages           int       `json:"num_images"`
	EnableSafetyChecker bool      `json:"enable_safety_checker"`
	OutputFormat        string    `json:"output_format"`
	// Seed is the task's seed (imagegen.Request.Seed): the same seed and
	// prompt give the same image.
	Seed *int64 `json:"seed,omitempty"`
}

// header is what every queue call sends: the key with the scheme word
// "Key" (not Bearer).
func (m *Model) header() http.Header {
	return http.Header{"Authorization": {"Key " + m.client.Key().Reveal()}}
}

// appOf checks an endpoint id, owner/app[/path] (with an optional
// "workflows/" or "comfy/" namespace in front), and returns the part the
// status, result and cancel URLs use: the namespace, owner and app,
// without the path.
func appOf(model string) (string, error) {
	segs := strings.Split(model, "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || url.PathEscape(s) != s {
			return "", fmt.Errorf("Config.Model %q is not an endpoint id (owner/app[/path], such as %s)", model, DefaultModel)
		}
	}
	n := 2
	if segs[0] == "workflows" || segs[0] == "comfy" {
		n = 3
	}
	if len(segs) < n {
		return "", fmt.Errorf("Config.Model %q is not an endpoint id (owner/app[/path], such as %s)", model, DefaultModel)
	}
	return strings.Join(segs[:n], "/"), nil
}
