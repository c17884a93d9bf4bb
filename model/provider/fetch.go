package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"slices"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/fetch"
)

// Reference is a fetched reference image, ready to send to a provider.
type Reference struct {
	Data        []byte
	ContentType string // an image/* type the provider accepts
	// Width and Height are read from the header; 0 when the standard
	// library cannot read it (WebP, HEIC).
	Width, Height int
}

// Common MIME types, for FetchReferences' accept list.
const (
	PNG  = "image/png"
	JPEG = "image/jpeg"
	WebP = "image/webp"
	GIF  = "image/gif"
	HEIC = "image/heic"
	HEIF = "image/heif"
)

// FetchReferences fetches the reference images of a request through f,
// all at once (fetch.All: within the fetcher's Timeout, at most
// fetch.MaxSetTime for the whole set), and returns them in order. The
// type of each is taken from its bytes alone (ReferenceType), never
// from the Content-Type the remote server sent: bytes that are not a
// PNG, JPEG, WebP, GIF, HEIC or HEIF image are refused; one
// the provider does not accept (not in accept) is converted to PNG when
// the standard library can decode it within the fetcher's limits
// (*fetch.Fetcher's MaxPixels and MaxDecodedBytes; fetch's defaults for
// a fetcher without a Decode of its own), one image at a time.
//
// Failures are *imagegen.ModelError naming the item (image_input[i]).
// A reference that cannot be fetched in time, like one that is
// unreachable, refused by the fetcher's guards, not an image or in a
// format that cannot be converted, is the user's input (InvalidInput:
// the task fails as invalid_image_input, without a retry); only ctx
// ending (the generation stopped) is retryable. The fetcher's error goes
// to Err only.
func FetchReferences(ctx context.Context, provider string, f fetch.ImageFetcher, urls []string, accept ...string) ([]Reference, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	if f == nil {
		return nil, &imagegen.ModelError{Provider: provider, InvalidInput: true, Message: "reference images are not available on this server", Err: errors.New("no ImageFetcher configured")}
	}
	type body struct {
		data []byte
		ct   string
	}
	bodies := make([]body, len(urls))
	i, err := fetch.All(ctx, len(urls), func(ctx context.Context, i int) error {
		data, ct, err := f.Fetch(ctx, urls[i])
		bodies[i] = body{data, ct}
		return err
	})
	if err != nil {
		return nil, referenceError(ctx, provider, i, err)
	}
	refs := make([]Reference, 0, len(urls))
	for i, b := range bodies {
		ref, err := newReference(f, b.data, b.ct, accept)
		if err != nil {
			return nil, &imagegen.ModelError{Provider: provider, InvalidInput: true,
				Message: fmt.Sprintf("image_input[%d] is not a supported image", i), Err: fmt.Errorf("image_input[%d]: %w", i, err)}
		}
		bodies[i] = body{} // a converted image no longer needs its original
		refs = append(refs, ref)
	}
	return refs, nil
}

// referenceError is the error of reference i that could not be fetched:
// the user's input, unless ctx (the generation) ended first.
func referenceError(ctx context.Context, provider string, i int, err error) *imagegen.ModelError {
	if ctx.Err() != nil {
		return &imagegen.ModelError{Provider: provider, Retryable: true,
			Message: "generation interrupted", Err: fmt.Errorf("image_input[%d]: %w", i, err)}
	}
	if fetch.TimedOut(err) || isTimeout(err) {
		return &imagegen.ModelError{Provider: provider, InvalidInput: true,
			Message: fmt.Sprintf("image_input[%d] timed out while downloading", i), Err: fmt.Errorf("image_input[%d]: %w", i, err)}
	}
	return &imagegen.ModelError{Provider: provider, InvalidInput: true,
		Message: fmt.Sprintf("image_input[%d] could not be downloaded", i), Err: fmt.Errorf("image_input[%d]: %w", i, err)}
}

// imageDecoder decodes an image under limits of its own, as
// *fetch.Fetcher's Decode does under its Config's MaxPixels and
// MaxDecodedBytes.
type imageDecoder interface {
	Decode(data []byte) (image.Image, string, error)
}

// newReference makes a reference of a fetched body, typed from its
// bytes (ReferenceType): the Content-Type the remote server declared is
// not trusted, and only named in the error of bytes that are not an
// image of a supported kind. One of a type the provider does not accept
// is converted to PNG, decoded under f's limits when f is an
// imageDecoder (the guarded fetcher), else under fetch's defaults: a
// user's reference of a few hundred bytes may name a hundred million
// pixels, which decoding would allocate whole.
func newReference(f fetch.ImageFetcher, data []byte, declared string, accept []string) (Reference, error) {
	ct, err := ReferenceType(data)
	if err != nil {
		return Reference{}, fmt.Errorf("content declared %q: %w", declared, err)
	}
	ref := Reference{Data: data, ContentType: ct}
	if s, err := ImageSize(data); err == nil {
		ref.Width, ref.Height = s.W, s.H
	}
	if len(accept) == 0 || slices.Contains(accept, ct) {
		return ref, nil
	}
	if ref.Width == 0 {
		return Reference{}, fmt.Errorf("%s is not accepted (%s) and cannot be converted to PNG", ct, strings.Join(accept, ", "))
	}
	decode := func(data []byte) (image.Image, string, error) {
		return fetch.DecodeWithin(data, fetch.DefaultMaxPixels, fetch.DefaultMaxDecodedBytes)
	}
	if d, ok := f.(imageDecoder); ok {
		decode = d.Decode
	}
	img, _, err := decode(data)
	if err != nil {
		return Reference{}, fmt.Errorf("%s is not accepted (%s) and cannot be converted to PNG: %w", ct, strings.Join(accept, ", "), err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return Reference{}, fmt.Errorf("converting %s to PNG: %w", ct, err)
	}
	ref.Data, ref.ContentType = buf.Bytes(), PNG
	return ref, nil
}

// DownloadResult fetches a generated image that a provider answered
// with a URL (dall-e, Replicate, fal), through f. A failure is a
// retryable *imagegen.ModelError (MsgUnavailable); the URL, often
// signed, is kept out of the error. The type comes from the bytes.
func DownloadResult(ctx context.Context, provider string, f fetch.ImageFetcher, url string) (imagegen.GeneratedImage, error) {
	if f == nil {
		return imagegen.GeneratedImage{}, &imagegen.ModelError{Provider: provider, Misconfigured: true, Message: MsgMisconfigured, Err: errors.New("the provider answered with a URL and no ImageFetcher is configured")}
	}
	data, _, err := f.Fetch(ctx, url)
	if err != nil {
		return imagegen.GeneratedImage{}, &imagegen.ModelError{Provider: provider, Retryable: true, Message: MsgUnavailable, Err: fmt.Errorf("downloading the result: %w", err)}
	}
	return AnsweredImage(provider, "the downloaded result", data)
}

// PlanAndFetch is the start of an adapter's Generate: it plans req on m
// again (Generate may be called without Plan: a request Plan refuses
// fails as invalid input, with no call made) and, for image-to-image,
// fetches the references through f (FetchReferences with accept).
func PlanAndFetch(ctx context.Context, provider string, m imagegen.Model, req imagegen.Request, f fetch.ImageFetcher, accept ...string) ([]Reference, error) {
	if _, err := m.Plan(req); err != nil {
		return nil, &imagegen.ModelError{Provider: provider, InvalidInput: true, Message: err.Error(), Err: err}
	}
	if req.Scene != imagegen.SceneImageToImage {
		return nil, nil
	}
	return FetchReferences(ctx, provider, f, req.ImageInput, accept...)
}
