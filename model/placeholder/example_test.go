package placeholder_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/placeholder"
)

func ExampleModel() {
	m, err := placeholder.New(placeholder.Config{LongSide: 64})
	if err != nil {
		panic(err)
	}
	req := imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a lighthouse", AspectRatio: imagegen.Aspect16x9}
	plan, _ := m.Plan(req)
	out, err := m.Generate(context.Background(), imagegen.Generation{Model: plan.Model, Request: req})
	if err != nil {
		panic(err)
	}
	img, err := png.Decode(bytes.NewReader(out[0].Data))
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Model, plan.Cost, out[0].ContentType, img.Bounds())
	// Output: placeholder 1 image/png (0,0)-(64,36)
}
