package comfyui_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/provider/providertest"
)

// A prompt reaches the workflow exactly as written: quotes, newlines and
// braces stay text, and placeholders typed into it are not filled (an
// {{image_2}} in a one-reference task's prompt is not the operator's
// configuration error, and {{image}} does not become a file name).
func TestPromptTextIsNotAWorkflowTemplate(t *testing.T) {
	is := is.New(t)
	f := newFake(t)
	m, _ := newModel(t, f, withCat(comfyui.Config{}))
	prompt := "a sign saying \"{{image}}\",\nthen {{image_2}} {{seed}} {{prompt}} {{negative_prompt}} }\\{"
	_, err := generate(t, m, providertest.I2I(prompt, imagegen.Aspect1x1, catURL), nil)
	is.NoErr(err)
	is.Equal(f.node(t, "6", "text"), prompt)
	is.Equal(f.node(t, "10", "image"), "uploaded-imagegen-task-1-1-0.png")
}
