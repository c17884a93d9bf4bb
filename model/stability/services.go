package stability

import "strings"

// service is what the adapter knows of one model: the endpoint that
// runs it and how.
type service struct {
	path  string // under the base URL
	sd3   bool   // POST /generate/sd3: sends model and mode
	image bool   // takes an init image (image + strength): image-to-image
	style bool   // takes style_preset
	cost  int64  // default price in credits (Config.Cost overrides)
}

// serviceOf returns the service of a Config.Model value, or false.
// Functions, so that no table is shared mutable state.
func serviceOf(model string) (service, bool) {
	switch model {
	case "core":
		return service{path: "/v2beta/stable-image/generate/core", style: true, cost: 2}, true
	case "ultra":
		return service{path: "/v2beta/stable-image/generate/ultra", image: true, cost: 3}, true
	case "sd3.5-large", "sd3-large":
		return service{path: sd3Path, sd3: true, image: true, style: true, cost: 3}, true
	case "sd3.5-large-turbo", "sd3-large-turbo", "sd3.5-medium", "sd3-medium":
		return service{path: sd3Path, sd3: true, image: true, style: true, cost: 2}, true
	case "sd3.5-flash":
		return service{path: sd3Path, sd3: true, image: true, style: true, cost: 1}, true
	}
	return service{}, false
}

const sd3Path = "/v2beta/stable-image/generate/sd3"

// models lists the Config.Model values, for error messages.
func models() string {
	return strings.Join([]string{"core", "ultra", "sd3.5-large", "sd3.5-large-turbo", "sd3.5-medium", "sd3.5-flash", "sd3-large", "sd3-large-turbo", "sd3-medium"}, ", ")
}
