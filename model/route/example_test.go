package route_test

import (
	"fmt"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/model/route"
)

// Text-to-image on a cheap chain with a fallback, image-to-image on a
// dearer model.
func Example() {
	primary, backup, editor := imagegentest.NewModel(1), imagegentest.NewModel(1), imagegentest.NewModel(1)
	chain, _ := route.NewFallback("t2i", route.Entry{Name: "primary", Model: primary, Cost: 1}, route.Entry{Name: "backup", Model: backup})
	router, _ := route.ByScene(route.Entry{Name: "t2i", Model: chain}, route.Entry{Name: "editor", Model: editor, Cost: 3})

	p, _ := router.Plan(imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a fox"})
	fmt.Println(p.Model, p.Cost)
	p, _ = router.Plan(imagegen.Request{Scene: imagegen.SceneImageToImage, Prompt: "a fox", ImageInput: []string{"https://example.com/a.png"}})
	fmt.Println(p.Model, p.Cost)
	// Output:
	// t2i 1
	// editor 3
}
