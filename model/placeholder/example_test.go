package placeholder_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/placeholder"
)

func Example() {
	m, _ := placeholder.New(placeholder.Options{LongSide: 64})
	plan, _ := m.Plan(imagegen.Request{})
	out, _ := m.Generate(context.Background(), imagegen.Generation{
		Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse", AspectRatio: imagegen.Aspect16x9},
	})
	img, _ := png.Decode(bytes.NewReader(out[0].Data))
	fmt.Println(plan.Model, plan.Cost, out[0].ContentType, img.Bounds().Dx(), img.Bounds().Dy())
	// Output: placeholder 1 image/png 64 36
}
