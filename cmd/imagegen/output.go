package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/imagegen/imagegen/client"
)

// outputPath names the file of image i (0-based) of n. With -o (out),
// one image is written to out itself and several to out-1.png,
// out-2.png, … (the number before the extension). Without -o the name is
// the task id, numbered the same way, with ext, the extension of the
// image's type.
func outputPath(out, taskID string, i, n int, ext string) string {
	base := taskID + ext
	if out != "" {
		base = out
	}
	if n == 1 {
		return base
	}
	e := filepath.Ext(base)
	return strings.TrimSuffix(base, e) + "-" + strconv.Itoa(i+1) + e
}

// imageExt is the file extension for an image's content type, sniffed
// from its first bytes; an answer that is not an image is an error.
func imageExt(head []byte) (string, error) {
	switch ct := http.DetectContentType(head); ct {
	case "image/png":
		return ".png", nil
	case "image/jpeg":
		return ".jpg", nil
	case "image/webp":
		return ".webp", nil
	case "image/gif":
		return ".gif", nil
	default:
		if strings.HasPrefix(ct, "image/") {
			return ".img", nil
		}
		return "", fmt.Errorf("the server sent %s, not an image", ct)
	}
}

// saveImage downloads the image at imageURL into a temporary file beside
// its destination and renames it to name(ext) once complete, so that a
// failed or interrupted download, or one past budget, leaves no partial
// file. It returns the name written.
func saveImage(ctx context.Context, c *client.Client, budget *downloadBudget, imageURL, dir string, name func(ext string) string) (path string, err error) {
	f, err := os.CreateTemp(dir, ".imagegen-*.part")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := c.Download(ctx, imageURL, budget.writer(f)); err != nil {
		return "", err
	}
	head := make([]byte, 512)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	ext, err := imageExt(head[:n])
	if err != nil {
		return "", err
	}
	if err := f.Chmod(0o644); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	path = name(ext)
	if err := os.Rename(f.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}
