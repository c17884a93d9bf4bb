package comfyui_test

import (
	"fmt"
	"os"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// An operator's own workflow: the built-in text-to-image graph with the
// prompt inside a longer text. New checks its placeholders; Plan names
// the model after the workflow.
func ExampleNew_workflow() {
	data, _ := os.ReadFile("workflows/text-to-image.json")
	m, err := comfyui.New(comfyui.Config{
		Config:    provider.Config{BaseURL: "http://127.0.0.1:8188"},
		Name:      "portrait",
		Workflows: comfyui.Workflows{TextToImage: data},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, _ := m.Plan(providertest.T2I("an old sailor", imagegen.Aspect3x4))
	fmt.Println(plan.Model, plan.Cost, plan.Seeded)
	_, err = m.Plan(providertest.I2I("an old sailor", imagegen.AspectAuto, "https://img.example/a.png"))
	fmt.Println(err)

	_, err = comfyui.New(comfyui.Config{
		Config:    provider.Config{BaseURL: "http://127.0.0.1:8188"},
		Workflows: comfyui.Workflows{TextToImage: []byte(`{"3": {"class_type": "KSampler", "inputs": {"seed": "{{seed}}"}}}`)},
	})
	fmt.Println(err)
	// Output:
	// comfyui/portrait 1 true
	// scene: image-to-image is not supported by model comfyui/portrait
	// comfyui: Config.Workflows.TextToImage: no {{prompt}} placeholder
}
