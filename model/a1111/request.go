package a1111

import (
	"context"
	"encoding/base64"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// Paths of the sdapi calls.
const (
	pathTxt2Img   = "/sdapi/v1/txt2img"
	pathImg2Img   = "/sdapi/v1/img2img"
	pathInterrupt = "/sdapi/v1/interrupt"
	// pathProgress is the progress of the server's running job, whoever's
	// it is.
	pathProgress = "/sdapi/v1/progress"
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
	size := provider.ExactSize(provider.TargetRatio(req, refs, nil), m.cfg.Resolution, 8)
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

// generate sends the txt2img or img2img call.
func (m *Model) generate(ctx context.Context, path string, b body) (*provider.Response, error) {
	post, err := provider.PostJSON(m.client.URL(path), b, m.header())
	if err != nil {
		return nil, provider.BadAnswer(Provider, false, err)
	}
	return m.client.Do(ctx, post)
}
