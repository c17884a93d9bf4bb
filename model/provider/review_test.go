package provider_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
	"github.com/imagegen/imagegen/model/route"
)

// The failures that tell the user "the image service is misconfigured"
// are the operator's to fix, so they carry Misconfigured: a fallback
// chain then moves on to its next provider, as for a refused key.
func TestMisconfiguredFailuresAreMarked(t *testing.T) {
	ctx := context.Background()
	build := provider.Get("http://127.0.0.1:1/x", nil)
	badBuild := func(context.Context) (*http.Request, error) { return nil, errors.New("bad request template") }

	_, noClient := provider.Do(ctx, nil, build, provider.Policy{Provider: "acme"})
	_, buildFailed := provider.Do(ctx, http.DefaultClient, badBuild, provider.Policy{Provider: "acme"})
	_, noFetcher := provider.DownloadResult(ctx, "acme", nil, "https://cdn.example/out.png")

	for name, err := range map[string]error{"no HTTP client": noClient, "build failed": buildFailed, "no fetcher": noFetcher} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			var me *imagegen.ModelError
			is.True(errors.As(err, &me))
			is.Equal(me.Message, provider.MsgMisconfigured)
			is.True(me.Misconfigured) // so that route.Fallback moves on
			is.True(!me.Retryable && !me.Refused && !me.InvalidInput)
		})
	}
}

// urlModel answers with a URL result and has no fetcher to download it.
type urlModel struct{}

func (urlModel) Plan(imagegen.Request) (imagegen.Plan, error) {
	return imagegen.Plan{Model: "url", Cost: 1}, nil
}

func (urlModel) Generate(ctx context.Context, _ imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	img, err := provider.DownloadResult(ctx, "url", nil, "https://cdn.example/out.png")
	if err != nil {
		return nil, err
	}
	return []imagegen.GeneratedImage{img}, nil
}

type okModel struct{}

func (okModel) Plan(imagegen.Request) (imagegen.Plan, error) {
	return imagegen.Plan{Model: "ok", Cost: 1}, nil
}

func (okModel) Generate(context.Context, imagegen.Generation) ([]imagegen.GeneratedImage, error) {
	return []imagegen.GeneratedImage{{ContentType: "image/png", Data: []byte("png")}}, nil
}

func TestFallbackMovesOnFromAnAdapterWithoutFetcher(t *testing.T) {
	is := is.New(t)
	chain, err := route.NewFallback("url,ok", route.Entry{Name: "url", Model: urlModel{}}, route.Entry{Name: "ok", Model: okModel{}})
	is.NoErr(err)
	imgs, err := chain.Generate(context.Background(), imagegen.Generation{Request: imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p"}})
	is.NoErr(err)
	is.Equal(len(imgs), 1)
}
