package a1111

import (
	"context"
	"encoding/base64"
	"math"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// Paths of the sdapi calls.
const (
	pathTxt2Img   = "/sdapi/v1/txt2img"
	pathImg2Img   = "/sdapi/v1/img2img"
	pathProgress  = "/sdapi/v1/progress"
	pathInterrupt = "/sdapi/v1/interrupt"
	// pathTaskProgress is the web UI's progress of one job by its id
	// (modules/progress.py), which says whether that job is the one
	// running.
	pathTaskProgress = "/internal/progress"
)

// resizeCropAndResize is img2img's resize_mode that fills the target
// size from the reference without distorting it.
const resizeCropAndResize = 1

// body is the request of txt2img (StableDiffusionTxt2ImgProcessingAPI)
// and img2img (StableDiffusionImg2ImgProcessingAPI): the fields this
// adapter sets; the server fills the rest with its defaults.
type body struct {
	Prompt                            string            `json:"prompt"`
	NegativePrompt                    string            `json:"negative_prompt,omitempty"`
	Seed                              int64             `json:"seed"`
	Width                             int               `json:"width"`
	Height                            int               `json:"height"`
	Steps                             int               `json:"steps"`
	SamplerName                       string            `json:"sampler_name,omitempty"`
	BatchSize                         int               `json:"batch_size"`
	NIter                             int               `json:"n_iter"`
	OverrideSettings                  map[string]string `json:"override_settings,omitempty"`
	OverrideSettingsRestoreAfterwards bool              `json:"override_settings_restore_afterwards"`
	ForceTaskID                       string            `json:"force_task_id"`
	SendImages                        bool              `json:"send_images"`
	SaveImages                        bool              `json:"save_images"`
	// img2img only
	InitImages        []string `json:"init_images,omitempty"`
	DenoisingStrength float64  `json:"denoising_strength,omitempty"`
	ResizeMode        int      `json:"resize_mode,omitempty"`
}

// body is the request for req and the path it goes to.
func (m *Model) body(req imagegen.Request, refs []provider.Reference, id string) (body, string) {
	size := SizeFor(provider.TargetRatio(req, refs, nil), m.cfg.Resolution)
	b := body{
		Prompt: req.Prompt, NegativePrompt: m.cfg.NegativePrompt, Seed: -1,
		Width: size.W, Height: size.H, Steps: m.cfg.Steps, SamplerName: m.cfg.Sampler,
		BatchSize: 1, NIter: 1, OverrideSettingsRestoreAfterwards: true,
		ForceTaskID: id, SendImages: true,
	}
	if req.Seed != nil {
		b.Seed = *req.Seed
	}
	if m.cfg.Checkpoint != "" {
		b.OverrideSettings = map[string]string{"sd_model_checkpoint": m.cfg.Checkpoint}
	}
	if len(refs) == 0 {
		return b, pathTxt2Img
	}
	b.InitImages = []string{base64.StdEncoding.EncodeToString(refs[0].Data)}
	b.DenoisingStrength = m.cfg.DenoisingStrength
	b.ResizeMode = resizeCropAndResize
	return b, pathImg2Img
}

// SizeFor is the size asked for ratio r: of exactly that ratio, both
// sides multiples of 8 (as Stable Diffusion's latent space needs), with
// about the area of a square of side res. For res 1024: 1:1 1024x1024,
// 16:9 1408x792, 4:3 1184x888, 3:2 1248x832, and their portraits.
func SizeFor(r imagegen.AspectRatio, res int) provider.Size {
	a, b := r.Size()
	if a == 0 {
		a, b = 1, 1
	}
	step := lcm(8/gcd(a, 8), 8/gcd(b, 8)) // the smallest k making a*k and b*k multiples of 8
	k := math.Sqrt(float64(res*res) / float64(a*b))
	n := max(1, int(math.Round(k/float64(step))))
	return provider.Size{W: a * n * step, H: b * n * step}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int) int { return a / gcd(a, b) * b }

// generate sends the txt2img or img2img call.
func (m *Model) generate(ctx context.Context, path string, b body) (*provider.Response, error) {
	post, err := provider.PostJSON(m.client.URL(path), b, m.header())
	if err != nil {
		return nil, provider.BadAnswer(Provider, false, err)
	}
	return m.client.Do(ctx, post)
}
